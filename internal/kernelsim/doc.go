// Package kernelsim is a SIMULATED Linux kernel module subsystem for fast
// tests. It is not a kernel and nothing in production uses it: the kmod
// provider reaches it only through test hooks (see providers/kmod).
//
// A simulator lives in one directory (Root) that plays the parts a real node
// has:
//
//	Root/sys/module/NAME/{initstate,refcnt,parameters/P,holders/H}  (sysfs)
//	Root/proc/modules                                              (procfs)
//	Root/etc/modprobe.d/*.conf      "options NAME k=v ..." lines, honoured on load
//	Root/lib/modules/catalog        the modules this kernel can load (below)
//	Root/bin/{modprobe,rmmod,lsmod,kernelsim}   shims to put first on PATH
//
// The shims run the multi-call binary cmd/kernelsim, which acts on Root under
// a file lock, with the real kmod tools' exit codes and error texts for the
// cases the provider meets (not found, in use, not loaded, invalid argument).
//
// Modelled: load with parameters (modprobe.d options first, then the command
// line; unknown parameters ignored as the kernel does; a bad value fails the
// load with "Invalid argument"), dependencies (holders and refcounts), bool
// parameters (read Y/N, accept 1/0/y/n/Y/N/on/off), int and string
// parameters, read-only (0444), writable (0644) and hidden (mode 0: not in
// sysfs) parameters, "in use" refcounts held by a process (Use/Release, or
// `kernelsim use NAME`), `modprobe` of a loaded module being a no-op,
// `modprobe -r` removing unused dependencies while `rmmod` does not, and a
// Reboot that unloads everything and loads the catalogue's boot modules.
//
// # Catalogue
//
// One module per line; '#' starts a comment:
//
//	NAME [depends=A,B] [boot] [size=N] [PARAM...]
//	PARAM = pname:type[:mode]=default   type: bool int uint long ulong short ushort byte charp
//	                                    mode: ro (0444, default) | rw (0644) | hidden (0)
//
// Example (the seed's module on a DGX Spark):
//
//	drm        boot
//	nvidia_drm depends=drm boot modeset:bool:ro=N fbdev:bool:ro=N
package kernelsim
