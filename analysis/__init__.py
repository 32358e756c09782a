"""Figures and tables from result files. Reads only what a run wrote; never imports the engine."""
