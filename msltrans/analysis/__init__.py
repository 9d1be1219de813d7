"""Analyses over `msltrans.ir` that the lowering consults (facts about values, never MSL)."""
