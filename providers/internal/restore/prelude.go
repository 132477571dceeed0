package restore

// Prelude defines the record functions in POSIX sh (busybox too). Each
// takes BASE KIND NAME first: BASE is Store.Dir ("" for the default).
//
//	sf_rdir BASE KIND            print the record folder
//	sf_rcat BASE KIND NAME       print "record" and the record, or nothing
//	sf_rcreate BASE KIND NAME TEXT   write TEXT unless a record exists
//	                                 (sets, then resets, TERM/HUP/INT traps)
//	sf_rappend BASE KIND NAME TEXT   append TEXT to the record
//	sf_rrm BASE KIND NAME        remove the record and empty folders
const Prelude = `sf_rdir() {
	if [ -n "$1" ]; then _b=$1
	elif [ "$(id -u)" = 0 ]; then _b=/var/lib/sparkform
	else _b=${XDG_STATE_HOME:-${HOME:?no HOME for the restore records}/.local/state}/sparkform
	fi
	printf '%s/restore/%s\n' "$_b" "$2"
}
sf_fsync() { sync "$@" 2>/dev/null || sync; }
sf_rcat() {
	_f=$(sf_rdir "$1" "$2")/$3
	if [ -f "$_f" ]; then echo record; cat "$_f"; fi
}
sf_rcreate() {
	_d=$(sf_rdir "$1" "$2") || return 1
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
	_f=$(sf_rdir "$1" "$2")/$3
	printf '%s' "$4" >>"$_f" || return 1
	sf_fsync "$_f"
}
sf_rrm() {
	_d=$(sf_rdir "$1" "$2") || return 1
	[ -e "$_d/$3" ] || return 0
	rm -f "$_d/$3" || return 1
	sf_fsync "$_d"
	rmdir "$_d" 2>/dev/null && rmdir "${_d%/*}" 2>/dev/null && rmdir "${_d%/*/*}" 2>/dev/null
	return 0
}
`
