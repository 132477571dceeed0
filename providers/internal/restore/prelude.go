package restore

// Prelude defines the record functions in POSIX sh (busybox too). Each
// takes BASE KIND NAME first: BASE is Store.Dir ("" for the default).
//
//	sf_rdir BASE KIND            print the record folder
//	sf_rdirv BASE KIND           set _rdv to it (no subshell)
//	sf_rcat BASE KIND NAME       print "record" and the record, or nothing
//	sf_rcreate BASE KIND NAME TEXT   write TEXT unless a record exists
//	                                 (sets, then resets, TERM/HUP/INT traps)
//	sf_rappend BASE KIND NAME TEXT   append TEXT to the record
//	sf_rrm BASE KIND NAME        remove the record and empty folders
const Prelude = `sf_rdirv() {
	# The folder in _rdv, in this shell: no subshell, and "id -u" once per
	# script (a process each costs milliseconds on a busy node).
	if [ -n "$1" ]; then _rdv=$1/restore/$2; return 0; fi
	[ -n "${_sf_uid-}" ] || _sf_uid=$(id -u)
	if [ "$_sf_uid" = 0 ]; then _rdv=/var/lib/sparkform/restore/$2; return 0; fi
	if [ -n "${XDG_STATE_HOME-}" ]; then _rdv=$XDG_STATE_HOME/sparkform/restore/$2; return 0; fi
	[ -n "${HOME-}" ] || { echo "sf_rdir: no HOME for the restore records" >&2; return 1; }
	_rdv=$HOME/.local/state/sparkform/restore/$2
}
sf_rdir() { sf_rdirv "$1" "$2" && printf '%s\n' "$_rdv"; }
sf_fsync() { sync "$@" 2>/dev/null || sync; }
sf_rcat() {
	sf_rdirv "$1" "$2" || return 1
	_f=$_rdv/$3
	if [ -f "$_f" ]; then echo record; cat "$_f"; fi
}
sf_rcreate() {
	sf_rdirv "$1" "$2" || return 1
	_d=$_rdv
	[ -f "$_d/$3" ] && return 0
	(umask 077 && mkdir -p "$_d") || return 1
	# Temp files of a write killed outright (SIGKILL) before its cleanup.
	find "$_d" -maxdepth 1 -name '.new.*' -mmin +10 -exec rm -f {} + 2>/dev/null
	# Another run's sf_rrm removes the folder once it is empty, which can
	# fall between the mkdir and the mktemp: make it again and retry (the
	# temp file then keeps it). The last try reports its error.
	_n=1
	until _t=$(umask 077 && mkdir -p "$_d" && mktemp "$_d/.new.XXXXXX" 2>/dev/null); do
		[ $_n -lt 5 ] || { _t=$(umask 077 && mkdir -p "$_d" && mktemp "$_d/.new.XXXXXX") || return 1; break; }
		_n=$((_n + 1))
	done
	# A cancelled command gets SIGTERM (sudo relays it), a dropped link
	# SIGHUP: take the temp file along. (Resets those traps afterwards.)
	trap 'rm -f "$_t"; exit 143' TERM
	trap 'rm -f "$_t"; exit 129' HUP
	trap 'rm -f "$_t"; exit 130' INT
	if ! printf '%s' "$4" >"$_t"; then rm -f "$_t"; trap - TERM HUP INT; return 1; fi
	sf_fsync "$_t"
	# ln fails when the record exists: the first one wins.
	ln "$_t" "$_d/$3" 2>/dev/null
	rm -f "$_t"
	trap - TERM HUP INT
	sf_fsync "$_d"
	[ -f "$_d/$3" ]
}
sf_rappend() {
	sf_rdirv "$1" "$2" || return 1
	_f=$_rdv/$3
	printf '%s' "$4" >>"$_f" || return 1
	sf_fsync "$_f"
}
sf_rrm() {
	sf_rdirv "$1" "$2" || return 1
	_d=$_rdv
	[ -e "$_d/$3" ] || return 0
	rm -f "$_d/$3" || return 1
	sf_fsync "$_d"
	rmdir "$_d" 2>/dev/null && rmdir "${_d%/*}" 2>/dev/null && rmdir "${_d%/*/*}" 2>/dev/null
	return 0
}
`
