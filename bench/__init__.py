"""Mnemo's benchmarks: speed, scale and memory quality, side by side with the alternatives.

Run `python -m bench [--quick] [--only NAME]`. Each benchmark is one module with a
`run(config)` coroutine that measures, prints, and writes a markdown table (and plots) to
bench/results/. Benchmarks measure; they never fail on a time.
"""
