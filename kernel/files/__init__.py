"""Files on disk: reading a source faithfully, writing it back atomically.

Reading a file's text with its encoding and newline style, atomic writes (temp file, fsync,
rename) that keep mode and encoding, a batch of writes with the backups that undo it, the
persist lock and write journal shared by several runtimes on one project, catching the
files that in-process code writes, and telling which of a set of files changed since a
moment from the kernel's file events (a check template's staleness).

Imports: nothing else of the kernel but `errors` and `defaults`.
"""
