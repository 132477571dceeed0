package hubstage

// The node-side scripts of a direct copy: the one-time key on the source
// node S (installed, removed, swept) and its forced serve script.

// peerKeyKind is the restore record kind of the one-time keys on S.
const peerKeyKind = "hubsnapshot_peerkey"

// keyMarker ends every one-time key line: "sparkform-snapshot-<id>".
const keyMarker = "sparkform-snapshot-"

// serveScript is the forced command of a one-time key (run by /bin/sh as
// S's login user; BLOBS is replaced by the quoted blobs folder of the one
// repository it serves). It answers "ping", "blob ETAG OFFSET" (the
// blob's bytes from OFFSET) and "tar", and refuses anything else: an etag must be
// 40 or 64 lowercase hex, the offset a plain decimal number. "tar" reads
// etags from stdin and answers a tar of those blobs (many small files in
// one stream).
const serveScript = `# sparkform hubstage_snapshot: the forced command of a one-time key. It
# serves the blobs of one repository, read only, and nothing else.
b=BLOBS
set -f
set -- ${SSH_ORIGINAL_COMMAND:-}
bad() { printf 'sparkform serve: %s\n' "$1" >&2; exit 2; }
case ${1:-} in
ping) [ $# -eq 1 ] || bad "usage: ping"; echo sparkform-serve ;;
blob)
  [ $# -eq 3 ] || bad "usage: blob ETAG OFFSET"
  case $2 in *[!0-9a-f]*|'') bad "bad etag" ;; esac
  [ ${#2} -eq 40 ] || [ ${#2} -eq 64 ] || bad "bad etag"
  case $3 in 0) ;; [1-9]*) case $3 in *[!0-9]*) bad "bad offset" ;; esac ;; *) bad "bad offset" ;; esac
  [ ${#3} -le 18 ] || bad "bad offset"
  [ -f "$b/$2" ] || { printf 'sparkform serve: no blob %s\n' "$2" >&2; exit 3; }
  exec tail -c +$(($3 + 1)) "$b/$2" ;;
tar)
  # The etags on stdin, one a line: a tar of those blobs (links
  # followed), each entry named by its etag.
  [ $# -eq 1 ] || bad "usage: tar, with the etags on stdin"
  set --
  while IFS= read -r e; do
    case $e in *[!0-9a-f]*|'') bad "bad etag" ;; esac
    [ ${#e} -eq 40 ] || [ ${#e} -eq 64 ] || bad "bad etag"
    [ -f "$b/$e" ] || { printf 'sparkform serve: no blob %s\n' "$e" >&2; exit 3; }
    set -- "$@" "$e"
  done
  [ $# -gt 0 ] || bad "no etags"
  cd "$b" && exec tar -chf - --format=gnu -- "$@" ;;
*) bad "refused: only ping, blob and tar requests are served" ;;
esac
`

// peerKeyFuncs are shell functions over the restore Prelude: sf_punkey
// BASE KIND NAME removes what one record installed (the key line, the
// serve folder, then the record); sf_psweep BASE KIND OWNER NOW removes
// every record of OWNER (a transfer of the same snapshot that a crash
// left behind) and every expired one. Both run under the lock on $HOME.
const peerKeyFuncs = `sf_pfield() { sed -n "s/^$1 //p" "$2" | head -n 1; }
sf_punkey() {
	_f=$(sf_rdir "$1" "$2")/$3
	[ -f "$_f" ] || return 0
	_ak=$(sf_pfield authorized_keys "$_f")
	_line=$(sf_pfield line "$_f")
	_sd=$(sf_pfield serve "$_f")
	if [ -n "$_ak" ] && [ -n "$_line" ] && [ -f "$_ak" ] && grep -qxF -- "$_line" "$_ak"; then
		_last=
		[ "$(tail -n 1 "$_ak")" = "$_line" ] && _last=yes
		_t=$(mktemp "$_ak.sparkform.XXXXXX") || return 1
		grep -vxF -- "$_line" "$_ak" >"$_t"
		if [ -n "$_last" ] && grep -qx 'newline yes' "$_f"; then
			# The file ended without a newline before the key was added:
			# take back the one added before it.
			printf '%s' "$(cat "$_t")" >"$_t.2" && mv -f "$_t.2" "$_t" || { rm -f "$_t" "$_t.2"; return 1; }
		fi
		chmod "$(stat -c %a "$_ak")" "$_t" && mv -f "$_t" "$_ak" || { rm -f "$_t"; return 1; }
	fi
	_md=$(sf_pfield madedir "$_f")
	if grep -qx 'madefile yes' "$_f" && [ -f "$_ak" ]; then
		if [ ! -s "$_ak" ]; then
			rm -f "$_ak" || return 1
			[ -z "$_md" ] || rmdir "$_md" 2>/dev/null
		else
			# Other one-time keys are still in the file this one made:
			# hand it over, so that the last of them removes it.
			for _o in "${_f%/*}"/*; do
				[ "$_o" != "$_f" ] && [ -f "$_o" ] || continue
				_ol=$(sf_pfield line "$_o")
				if [ -n "$_ol" ] && grep -qxF -- "$_ol" "$_ak"; then
					printf 'madefile yes\n%s' "${_md:+madedir $_md
}" >>"$_o" || return 1
				fi
			done
		fi
	fi
	if [ -n "$_sd" ]; then
		rm -rf "$_sd" || return 1
		rmdir "${_sd%/*}" 2>/dev/null
	fi
	sf_rrm "$1" "$2" "$3"
}
sf_psweep() {
	for _r in "$(sf_rdir "$1" "$2")"/*; do
		[ -f "$_r" ] || continue
		_o=$(sf_pfield owner "$_r")
		_e=$(sf_pfield expires "$_r")
		case $_e in ''|*[!0-9]*) _e=0 ;; esac
		if [ "$_o" = "$3" ] || [ "$_e" -le "$4" ]; then sf_punkey "$1" "$2" "${_r##*/}" || return 1; fi
	done
}
sf_plock() {
	# One edit of authorized_keys at a time (parallel copies from one
	# source): flock on $HOME, which leaves no file behind.
	if command -v flock >/dev/null 2>&1; then
		exec 9<"$HOME" && flock -w 120 9 || { echo "cannot lock $HOME for authorized_keys" >&2; exit 1; }
	fi
}
sf_pak() {
	_a=${1:-${HOME:?no HOME on the source node}/.ssh/authorized_keys}
	# A link (a managed file elsewhere): edit the file it names.
	if [ -L "$_a" ]; then _a=$(readlink -f -- "$_a") || return 1; fi
	printf '%s\n' "$_a"
}
`

// installKeyScript ($1 base, $2 kind, $3 record name, $4 the record's
// first lines, $5 authorized_keys ("" = ~/.ssh/authorized_keys), $6 id,
// $7 owner, $8 expiry (epoch seconds), $9 the public key "TYPE BASE64",
// $10 the from= address ("" none), $11 the serve script) sweeps what
// earlier transfers of the same owner left and what expired, writes the
// restore record, then the serve script and the key line. It prints
// "installed".
const installKeyScript = `set -u
umask 077
now=$(date +%s) || exit 1
ak=$(sf_pak "$5") || exit 1
sf_plock
sf_psweep "$1" "$2" "$7" "$now" || exit 1
rd=$(sf_rdir "$1" "$2") || exit 1
sd=${rd%/restore/*}/snapserve/$6
case $sd in *[\"\'\\]*|*"
"*) printf 'the state folder %s holds a quote, backslash or newline, which a forced command in authorized_keys cannot carry\n' "$sd" >&2; exit 2 ;; esac
exp=$(date -d "@$8" +%Y%m%d%H%M%S) || exit 1
from=
[ -z "${10}" ] || from=",from=\"${10}\""
line="restrict,command=\"/bin/sh '$sd/serve'\",expiry-time=\"$exp\"$from $9 ` + keyMarker + `$6"
d=${ak%/*}
madedir= madefile= nl=
[ -d "$d" ] || madedir=$d
[ -e "$ak" ] || madefile=yes
if [ -s "$ak" ] && [ -n "$(tail -c 1 "$ak")" ]; then nl=yes; fi
sf_rcreate "$1" "$2" "$3" "$4authorized_keys $ak
line $line
serve $sd
${madedir:+madedir $madedir
}${madefile:+madefile yes
}${nl:+newline yes
}" || exit 1
mkdir -p "$sd" && printf '%s' "${11}" >"$sd/serve" || exit 1
mkdir -p "$d" || exit 1
{ [ -z "$nl" ] || printf '\n'; printf '%s\n' "$line"; } >>"$ak" || exit 1
echo installed
`

// removeKeyScript ($1 base, $2 kind, $3 record name) removes what one
// install put on S. It prints "removed".
const removeKeyScript = `set -u
sf_plock
sf_punkey "$1" "$2" "$3" || exit 1
echo removed
`

// dstSweepFunc stops the ssh master connections of key folders (cm0,
// cm1 ...) and removes the folders: sf_pdrop DIR...
const dstSweepFunc = `sf_pdrop() {
	for _d; do
		[ -d "$_d" ] || continue
		for _s in "$_d"/cm*; do
			[ ! -S "$_s" ] || ssh -F /dev/null -o ControlPath="$_s" -O exit sparkform-source >/dev/null 2>&1
		done
		rm -rf "$_d" || return 1
	done
}
`

// startMastersScript ($1 how many, $2 the control path prefix (master k
// listens on PREFIXk), $3 the ssh argv of a master, quoted (node.QuoteArgv:
// evaluated here), $4 S's address) starts the master connections of a
// direct copy at once, each by a ping login, and prints their answers; a
// refused login's ssh error goes to stderr with exit 1.
const startMastersScript = `set -u
n=$1 cm=$2 m=$3 addr=$4
k=0
while [ $k -lt "$n" ]; do
  eval "$m"' -o "ControlPath=$cm$k" -- "$addr" ping' >"$cm.out$k" 2>"$cm.err$k" &
  k=$((k+1))
done
wait
k=0 rc=0
while [ $k -lt "$n" ]; do
  cat "$cm.out$k"
  if [ "$(cat "$cm.out$k")" != sparkform-serve ]; then cat "$cm.err$k" >&2; rc=1; fi
  rm -f "$cm.out$k" "$cm.err$k"
  k=$((k+1))
done
exit $rc
`

// dstKeyScript ($1 owner, $2 known_hosts lines; stdin the private key)
// removes the key folders an earlier transfer of the same owner left on
// the destination, makes a fresh private one and writes the key and the
// known_hosts file there. It prints the folder.
const dstKeyScript = dstSweepFunc + `set -u
umask 077
t=${TMPDIR:-/tmp}
sf_pdrop "$t"/sparkform-snappeer-"$1".* || exit 1
d=$(mktemp -d "$t/sparkform-snappeer-$1.XXXXXX") || exit 1
printf '%s' "$2" >"$d/known_hosts" && cat >"$d/id" || { rm -rf "$d"; exit 1; }
printf '%s\n' "$d"
`

// dstSweepScript ($1 owner) removes the destination's key folders of owner.
const dstSweepScript = dstSweepFunc + `sf_pdrop "${TMPDIR:-/tmp}"/sparkform-snappeer-"$1".*`

// scanScript ($1 address, $2 port) runs on the destination: the source's
// host keys as its sshd presents them at that address, then "route ..."
// (the destination's route to it, for the key's from= option).
const scanScript = `set -u
for t in ssh ssh-keyscan; do
  command -v $t >/dev/null 2>&1 || { echo "$t not found on this node (install openssh-client)" >&2; exit 127; }
done
ssh-keyscan -T 10 -p "$2" -- "$1" 2>/dev/null
r=$(ip -o route get "$1" 2>/dev/null) && printf 'route %s\n' "$r"
exit 0
`

// relayStreamScript ($1 the blobs folder; stdin "ETAG OFFSET LEN" lines)
// runs on S for a relay: for each line exactly LEN bytes, the blob's from
// OFFSET, padded with zeros when the file is shorter (or missing: said on
// stderr), so that the frames the receiver gets stay whole and such a
// blob fails its content address there, alone.
const relayStreamScript = `set -u
b=$1
while read -r e off n; do
  case $e$off$n in *[!0-9a-f]*|'') echo "sparkform: bad request" >&2; exit 2 ;; esac
  { tail -c +$((off + 1)) -- "$b/$e" || printf 'sparkform: cannot read blob %s\n' "$e" >&2; exec cat /dev/zero; } | head -c "$n"
done
`
