"""cutout"""
