"""Changes as records: `Change`, its status, the `History` of a runtime, and the self-patch
safety net that watches changes to the running agent and rolls them back when it breaks.

Imports: nothing else of the kernel but `errors` and `defaults`.
"""
