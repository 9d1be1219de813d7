"""Control flow and the program: scf / cf, noinline calls, program ids and return, barriers,
device_print / device_assert."""
