"""Sampan edge agent: the device runtime (imaging, model runtime, agent). Imports nothing
of Sampan's platform or workers (docs/contracts.md)."""
