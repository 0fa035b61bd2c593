#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Prepare the kernel tree: unpack Debian's linux-source-6.1 once into a
# throwaway git repository (commit "pristine"), then record every patch and
# overlay of our components as one commit each, in series order.
#
# Series entries are either a patch (format-patch style, applied strictly with
# "git apply": exact context, no fuzz) or an overlay directory whose files are
# copied into the tree at the same relative paths -- new files, kept whole --
# together with the optional <dir>.patch that wires them in (Makefile,
# Kconfig, MAINTAINERS), committed with the message in <dir>.msg.  Commits are built in a scratch index, and the work tree is
# switched to the result only at the end, so files whose content did not
# change keep their timestamps and the kernel build stays incremental.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

tarball_id() { stat -L -c '%n %s %Y' "$SRC_TARBALL"; }

inputs_hash() {
	(
		cd "$TOP"
		tarball_id
		for c in $COMPONENTS; do
			[ -f "$c/series" ] || continue
			echo "== $c"
			cat "$c/series"
			find "$c" -type f ! -name '*~' -print0 | sort -z | xargs -0 sha256sum
		done
	) | sha256sum | cut -c1-64
}

unpack_pristine() {
	say "unpacking $SRC_TARBALL"
	rm -rf "$TREE" "$TREE.tmp"
	mkdir -p "$TREE.tmp"
	tar -xf "$SRC_TARBALL" -C "$TREE.tmp" --strip-components=1
	say "recording the pristine tree in $TREE (a local git repository)"
	git -C "$TREE.tmp" init -q
	git -C "$TREE.tmp" config user.name "kvm-asi build"
	git -C "$TREE.tmp" config user.email "build@localhost"
	git -C "$TREE.tmp" config core.autocrlf false
	git -C "$TREE.tmp" config gc.auto 0
	# The tree's own .gitignore files must not hide anything Debian shipped.
	git -C "$TREE.tmp" add -A -f .
	git -C "$TREE.tmp" commit -q -m "pristine linux-source-6.1 $(make -s -C "$TREE.tmp" kernelversion)"
	git -C "$TREE.tmp" tag pristine
	tarball_id >"$TREE.tmp/.git/asi-tarball"
	mv "$TREE.tmp" "$TREE"
}

# Commit the scratch index on top of $parent with the message in file $1.
commit_index() {
	local msgfile=$1 tree
	tree=$(git_t write-tree)
	parent=$(git_t commit-tree "$tree" -p "$parent" -F "$msgfile")
}

# git apply the patch file $2 (for error messages: component $1) to the index.
# When it does not apply, the entries before it are left on branch
# "partial" to refresh it against.
apply_to_index() {
	if ! git_t apply --cached --whitespace=nowarn "$2" 2>"$BUILD/apply.err"; then
		sed 's/^/    /' "$BUILD/apply.err" >&2
		git_t update-ref refs/heads/partial "$parent"
		rm -f "$BUILD/linux.prepared"
		echo "    the entries before it are on branch 'partial' of $TREE; to refresh it:" >&2
		echo "      git -C $TREE checkout -f partial && git -C $TREE apply --reject $2" >&2
		echo "      (resolve the .rej files), then: scripts/refresh-patch.sh $1/${2##*/}" >&2
		die "patch $1/${2##*/} does not apply to the pristine tree plus the entries before it"
	fi
}

apply_patch() {
	local comp=$1 file=$2 info
	[ -f "$TOP/$comp/$file" ] || die "$comp/series names $file, which does not exist"
	apply_to_index "$comp" "$TOP/$comp/$file"
	# Keep authorship and the message from the patch itself.
	info=$BUILD/mailinfo
	git mailinfo "$info.msg" /dev/null <"$TOP/$comp/$file" >"$info.hdr"
	local subject author email
	subject=$(sed -n 's/^Subject: //p' "$info.hdr")
	author=$(sed -n 's/^Author: //p' "$info.hdr")
	email=$(sed -n 's/^Email: //p' "$info.hdr")
	[ -n "$subject" ] || die "patch $comp/$file has no Subject: line"
	grep -q '^Signed-off-by: ' "$info.msg" || die "patch $comp/$file has no Signed-off-by"
	{ echo "$subject"; echo; cat "$info.msg"; } >"$info.full"
	GIT_AUTHOR_NAME=$author GIT_AUTHOR_EMAIL=$email commit_index "$info.full"
}

apply_overlay() {
	local comp=$1 dir=${2%/} f blob sob
	[ -d "$TOP/$comp/$dir" ] || die "$comp/series names $dir, which is not a directory"
	[ -f "$TOP/$comp/$dir.msg" ] || die "overlay $comp/$dir has no commit message ($dir.msg)"
	# The author is the first Signed-off-by of the message.
	sob=$(sed -n 's/^Signed-off-by: //p' "$TOP/$comp/$dir.msg" | head -n 1)
	[ -n "$sob" ] || die "overlay $comp/$dir.msg has no Signed-off-by"
	while IFS= read -r -d '' f; do
		f=${f#./}
		git_t cat-file -e "$parent:$f" 2>/dev/null &&
			die "overlay $comp/$dir replaces $f, which exists: change it with a patch"
		blob=$(git_t hash-object -w --path "$f" "$TOP/$comp/$dir/$f")
		git_t update-index --add --cacheinfo "100644,$blob,$f"
	done < <(cd "$TOP/$comp/$dir" && find . -type f -print0 | sort -z)
	[ -f "$TOP/$comp/$dir.patch" ] && apply_to_index "$comp" "$TOP/$comp/$dir.patch"
	GIT_AUTHOR_NAME=${sob% <*} GIT_AUTHOR_EMAIL=$(echo "$sob" | sed 's/.*<\(.*\)>.*/\1/') \
		commit_index "$TOP/$comp/$dir.msg"
}

main() {
	[ -r "$SRC_TARBALL" ] || die "$SRC_TARBALL not found (run 'make deps')"
	mkdir -p "$BUILD"
	local want have
	want=$(inputs_hash)
	have=$(cat "$BUILD/linux.prepared" 2>/dev/null || true)
	# Up to date: same inputs, on asi (not an entry's commit checked out to
	# refresh it), nothing edited.
	if [ -d "$TREE/.git" ] && [ "$want" = "$have" ] &&
	   [ "$(git_t symbolic-ref -q HEAD)" = refs/heads/asi ] &&
	   git_t diff --quiet HEAD 2>/dev/null; then
		say "kernel tree up to date: $(git_t log -1 --format=%s pristine) + $(git_t rev-list --count pristine..HEAD) commits"
		return 0
	fi
	[ "$(cat "$TREE/.git/asi-tarball" 2>/dev/null)" = "$(tarball_id)" ] || unpack_pristine

	say "applying our series to $(git_t log -1 --format=%s pristine)"
	export GIT_INDEX_FILE=$TREE/.git/index.prepare
	export GIT_COMMITTER_NAME="kvm-asi build" GIT_COMMITTER_EMAIL=build@localhost
	export GIT_COMMITTER_DATE="2026-01-01T00:00:00Z" GIT_AUTHOR_DATE="2026-01-01T00:00:00Z"
	git_t read-tree pristine
	parent=$(git_t rev-parse pristine)
	local e n=0
	while read -r e; do
		n=$((n + 1))
		printf '    %s\n' "$e"
		if [ -d "$TOP/$e" ]; then
			apply_overlay "${e%%/*}" "${e#*/}"
		else
			apply_patch "${e%%/*}" "${e#*/}"
		fi
	done < <(series_entries)
	rm -f "$GIT_INDEX_FILE"
	unset GIT_INDEX_FILE
	git_t update-ref refs/heads/asi "$parent"
	# Switching from the old tip rewrites only the files that differ.
	git_t checkout -q -f asi
	git_t clean -q -d -f -x
	git_t update-ref -d refs/heads/partial 2>/dev/null || true
	echo "$want" >"$BUILD/linux.prepared"
	say "kernel tree ready: $(git_t log -1 --format=%s pristine) + $n commits"
}

main "$@"
