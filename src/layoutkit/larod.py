"""Axis larod tensor pitches (work in progress)."""
