"""harnessgen: fuzz compiler optimizations in isolation.

Pipeline (one module per stage):
targets -> instances -> cutout -> constraints -> layout -> emit/build -> engines -> replay
"""
__version__ = "0.1.0"
