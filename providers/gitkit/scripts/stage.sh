# stage.sh MODE REPO COMMIT SUBDIR PATH
#
# MODE create: PATH must not exist. update: PATH (ours) is swapped for the
# new tree. probe: stage in the temporary tree only, print its digest, and
# leave PATH alone (import).
#
# Everything happens in a temporary sibling of PATH (same filesystem, so
# the final move is a rename) that is removed on every exit. Lines on
# stdout starting "progress: " are progress events, "gitprogress: " git's
# own fetch progress; "digest: HEX" is the
# result. Exit codes: 10 repo unreachable, 11 commit not in repo, 12 subdir
# missing, 13 PATH exists (create), 77 parent not writable (retry with sudo).
# "made: DIR" names an ancestor of PATH that did not exist and that this
# run created (mkdir -p); destroy removes those again when they are empty.
mode=$1 repo=$2 commit=$3 subdir=$4 path=$5

GIT_TERMINAL_PROMPT=0
export GIT_TERMINAL_PROMPT
: "${GIT_SSH_COMMAND:=ssh -o BatchMode=yes}"
export GIT_SSH_COMMAND

exists() { [ -e "$1" ] || [ -L "$1" ]; }
parent=$(dirname "$path")
base=$(basename "$path")

# The ancestors of PATH that do not exist yet, deepest first, one a line
# (paths hold no newline: the provider refuses them).
made=
d=$parent
while ! exists "$d"; do
	made="$made$d
"
	d=$(dirname "$d")
done
# unmake removes the folders this run made, deepest first, while empty.
unmake() {
	printf '%s' "$made" | while IFS= read -r d; do
		rmdir "$d" 2>/dev/null || break
	done
}
# On any failure nothing stays: neither the temporary tree nor the folders
# made for PATH (when PATH itself is not in place).
tmp=
cleanup() {
	if [ -n "$tmp" ]; then rm -rf "$tmp"; fi
	if ! exists "$path"; then unmake; fi
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
# A dropped SSH link shows as a broken pipe at the next progress line:
# without a handler sh dies of SIGPIPE and skips the EXIT cleanup.
trap 'exit 141' PIPE

if [ -n "$made" ]; then
	mkdir -p "$parent" || exit 77
fi
if [ ! -w "$parent" ] || [ ! -x "$parent" ]; then
	printf 'gitkit: %s is not writable by %s\n' "$parent" "$(id -un)" >&2
	exit 77
fi
printf '%s' "$made" | while IFS= read -r d; do
	printf 'made: %s\n' "$d"
done
# Leftovers of an apply that was killed before its own cleanup ran.
rm -rf "$parent/.$base.sparkform-tmp-"*

if [ "$mode" = create ] && exists "$path"; then
	printf 'gitkit: %s already exists\n' "$path" >&2
	exit 13
fi

tmp=$(mktemp -d "$parent/.$base.sparkform-tmp-XXXXXX") || exit 1
src=$tmp/src

# A repo on this machine owned by another user (a shared mirror) trips
# git's "dubious ownership" check. The config names this repo as the
# source, so trust exactly it, for the fetch only: a global config that
# includes the user's own and adds safe.directory (git drops -c for the
# local upload-pack it starts, but keeps GIT_CONFIG_GLOBAL).
case $repo in
file://*) local_repo=${repo#file://} ;;
/* | ./* | ../*) local_repo=$repo ;;
*:*) local_repo= ;;
*) local_repo=$repo ;;
esac
fetchcfg=${GIT_CONFIG_GLOBAL:-}
if [ -n "$local_repo" ] && real=$(cd "$local_repo" 2>/dev/null && pwd -P); then
	fetchcfg=$tmp/fetch.gitconfig
	esc() { printf '%s' "$1" | sed 's/[\\"]/\\&/g'; }
	{
		if [ -n "${GIT_CONFIG_GLOBAL:-}" ]; then
			printf '[include]\n\tpath = "%s"\n' "$(esc "$GIT_CONFIG_GLOBAL")"
		elif [ -n "${HOME:-}" ]; then
			printf '[include]\n\tpath = "%s"\n' "$(esc "${XDG_CONFIG_HOME:-$HOME/.config}/git/config")" "$(esc "$HOME/.gitconfig")"
		fi
		printf '[safe]\n\tdirectory = "%s"\n' "$(esc "$real")"
	} >"$fetchcfg" || exit 1
fi
# git's --progress lines (\r-separated) become "gitprogress: " lines on
# stdout as they come (stdbuf, where there is one, keeps tr from holding
# them back); every stderr line also goes to $tmp/err for the error text.
unbuf=
if command -v stdbuf >/dev/null 2>&1; then unbuf="stdbuf -o0"; fi
fetch() {
	{
		if [ -n "$fetchcfg" ]; then
			GIT_CONFIG_GLOBAL=$fetchcfg git -C "$src" fetch --progress -- "$repo" "$@" 2>&1 >/dev/null
		else
			git -C "$src" fetch --progress -- "$repo" "$@" 2>&1 >/dev/null
		fi
		echo $? >"$tmp/rc"
	} | $unbuf tr '\r' '\n' | {
		: >"$tmp/err"
		while IFS= read -r l; do
			case $l in
			*objects:* | *deltas:* | *'Enumerating objects'*) printf 'gitprogress: %s\n' "$l" ;;
			*) printf '%s\n' "$l" >>"$tmp/err" ;;
			esac
		done
	}
	return "$(cat "$tmp/rc")"
}

printf 'progress: cloning %s\n' "$repo"
git init -q "$src" >/dev/null || exit 1
# A shallow fetch of exactly the commit is cheapest; servers that refuse
# to serve a commit by id get a full fetch of branches and tags instead.
if ! fetch --depth 1 "$commit"; then
	if ! fetch '+refs/heads/*:refs/remotes/origin/*' '+refs/tags/*:refs/tags/*'; then
		cat "$tmp/err" >&2
		exit 10
	fi
fi

printf 'progress: checking out %s\n' "$commit"
if ! git -C "$src" cat-file -e "$commit^{commit}" 2>/dev/null; then
	exit 11
fi
git -C "$src" -c core.autocrlf=false -c core.symlinks=true -c advice.detachedHead=false \
	checkout -q "$commit" || exit 1

if [ -n "$subdir" ]; then
	printf 'progress: staging %s\n' "$subdir"
	staged=$src/$subdir
	if [ -L "$staged" ] || [ ! -d "$staged" ]; then
		exit 12
	fi
else
	echo "progress: staging the whole tree"
	rm -rf "$src/.git" || exit 1
	staged=$src
fi

case $mode in
probe)
	echo "digest: $(tree_digest "$staged")"
	exit 0
	;;
create)
	if exists "$path"; then
		printf 'gitkit: %s already exists\n' "$path" >&2
		exit 13
	fi
	mv "$staged" "$path" || exit 1
	;;
update)
	if exists "$path"; then
		mv "$path" "$tmp/old" || exit 1
	fi
	if ! mv "$staged" "$path"; then
		if exists "$tmp/old"; then mv "$tmp/old" "$path"; fi
		exit 1
	fi
	;;
*)
	printf 'gitkit: unknown mode %s\n' "$mode" >&2
	exit 2
	;;
esac
echo "digest: $(tree_digest "$path")"
