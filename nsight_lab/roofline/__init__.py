"""Roofline: device peaks (datasheet and measured), the work model, and placement."""
