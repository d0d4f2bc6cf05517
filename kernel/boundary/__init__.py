"""What a check may do: the boundary around every sandboxed run.

Landlock and its rules, seccomp, resource limits, process containment (a pid namespace or a
subreaper), a check's own user/mount/pid namespaces, copy-on-write views of a folder
(overlayfs), secret values and their scrubbing, the launcher that confines a shell command,
the record of which isolation applied, and a watch over the files a check's template
imported (which changed on disk: inotify).

Imports: the standard library, `liveforge.kernel.errors` and `liveforge.kernel.defaults`
only. Most modules here are also loaded by file path inside a sandbox child, which never
imports liveforge, so they use the standard library alone.
"""
