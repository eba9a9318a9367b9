#!/usr/bin/env bash
# The documentation made from docs/man/*.md by scripts/clidoc: the bash
# completion (registered with `complete -p`, and scripted completions of
# commands, subcommands, options and their values, as bash calls the
# function on <TAB>), the zsh completion (its syntax, and the same
# completions with zsh's completion builtins stood in for), and the man
# pages, which `man -l` and groff render without a warning and which name
# every option each program's own usage names.
set -u
: "${BUILD_DIR:?BUILD_DIR must point at the build directory}"
: "${SRC_DIR:?SRC_DIR must point at the source tree}"
# shellcheck source=../lib/sh/expect.sh
. "$SRC_DIR/tests/lib/sh/expect.sh"

BASH_COMP=$BUILD_DIR/completion/opencode-sandbox.bash
ZSH_COMP=$BUILD_DIR/completion/opencode-sandbox.zsh
T=$(mktemp -d /tmp/osb-clidoc.XXXXXX)
trap 'rm -rf "$T"; rm -f "$EXPECT_UNKNOWN"' EXIT
mkdir -p "$T/work/skeleton" "$T/work/src"
cd "$T/work" || exit 1

# --- bash ---

# bcomp WORD...: what <TAB> after the words offers (the last word is the one completed).
bcomp() {
	bash -c '
		source "$1"; shift
		COMP_WORDS=("$@")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		COMPREPLY=()
		_opencode_sandbox
		printf "%s\n" "${COMPREPLY[@]}" | sort | paste -sd" "' _ "$BASH_COMP" "$@" 2>&1
}

expect_eq "$(bash -c 'source "$1"; complete -p opencode-sandbox' _ "$BASH_COMP" 2>&1)" \
	"complete -F _opencode_sandbox opencode-sandbox" "bash: complete -p names the function"
expect_eq "$(bcomp opencode-sandbox sk)" "skeleton skills" "bash: sk<TAB> is skills (and a directory, a project)"
expect_eq "$(bcomp opencode-sandbox skills "")" "import list" "bash: skills <TAB>"
expect_eq "$(bcomp opencode-sandbox skills import --sc)" "--scope" "bash: an option of skills import"
expect_eq "$(bcomp opencode-sandbox skills import --scope "")" "global project" "bash: --scope's values"
expect_eq "$(bcomp opencode-sandbox skills import s)" "skeleton src" "bash: SOURCE is a directory"
expect_eq "$(bcomp opencode-sandbox doctor --j)" "--json" "bash: doctor --json"
expect_eq "$(bcomp opencode-sandbox --runtime docker doc)" "doctor" "bash: a run flag and its value before the command"
expect_eq "$(bcomp opencode-sandbox --network-mode "")" "off practical strict" "bash: a run flag's values"
expect_eq "$(bcomp opencode-sandbox help "")" "config doctor help image init policy run skills upgrade" "bash: help COMMAND"
expect_eq "$(bcomp opencode-sandbox upgrade --me)" "--method" "bash: upgrade's options"
expect_eq "$(bcomp opencode-sandbox policy test example.com --m)" "--method" "bash: policy test's options after its argument"
expect_contains "$(bcomp opencode-sandbox --)" "--network-mode" "bash: the run flags"

# --- zsh ---

if command -v zsh >/dev/null; then
	expect_eq "$(zsh -n "$ZSH_COMP" 2>&1; echo $?)" "0" "zsh: the completion parses"
	expect_eq "$(head -n 1 "$ZSH_COMP")" "#compdef opencode-sandbox" "zsh: #compdef"
	# zcomp WORD...: what the function offers, with compadd, _describe and _files printing.
	zcomp() {
		zsh -f -c '
			compadd() { [[ $1 == -- ]] && shift; print -r -- "$@"; }
			_describe() { local -a a; a=("${(@P)4}"); print -r -- "${a[@]%%:*}"; }
			_files() { print -r -- "(files $*)"; }
			f=$1; shift
			words=("$@"); CURRENT=$#; PREFIX=${words[CURRENT]}
			source $f' _ "$ZSH_COMP" "$@" 2>&1 | paste -sd' '
	}
	expect_eq "$(zcomp opencode-sandbox sk)" "run doctor init skills policy config image upgrade help (files -/)" "zsh: the commands (and directories)"
	expect_eq "$(zcomp opencode-sandbox skills "")" "import list" "zsh: skills <TAB>"
	expect_eq "$(zcomp opencode-sandbox skills import --scope "")" "global project" "zsh: --scope's values"
	expect_contains "$(zcomp opencode-sandbox doctor --)" "--json" "zsh: doctor's options"
	expect_eq "$(zcomp opencode-sandbox --runtime docker "")" "run doctor init skills policy config image upgrade help (files -/)" "zsh: a run flag's value is skipped"
else
	skip "zsh is not installed (scripts/install-deps)"
fi

# --- man pages ---

for page in opencode-sandbox.1 egressd.8 policyctl.1 sandbox-init.8; do
	f=$BUILD_DIR/man/$page
	if [ ! -s "$f" ]; then
		bad "$page is built"
		continue
	fi
	out=$(MANWIDTH=80 man -l "$f" 2>"$T/man.err")
	expect_eq "$(cat "$T/man.err")" "" "man -l $page: no warning"
	expect_contains "$out" "NAME" "man -l $page renders"
	expect_eq "$(groff -man -Tutf8 -ww -z "$f" 2>&1)" "" "groff -ww: $page has no warning"
done

# Every option a program's usage names is described in its man page (an
# item of its own, not only the synopsis).
man_covers() { # PROGRAM PAGE
	local usage opt items missing=""
	usage=$("$BUILD_DIR/$1" --help 2>&1)
	items=$(sed -n '/^\.TP$/{n;p}' "$BUILD_DIR/man/$2" | sed 's/\\-/-/g')
	for opt in $(printf '%s\n' "$usage" | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u); do
		printf '%s\n' "$items" | grep -qE -- "^\\\\fB$opt( |\\\\f)" || missing="$missing $opt"
	done
	expect_eq "${missing# }" "" "$2 describes every option of \`$1 --help\`"
}
man_covers egressd egressd.8
man_covers policyctl policyctl.1
man_covers sandbox-init sandbox-init.8
expect_contains "$(MANWIDTH=200 man -l "$BUILD_DIR/man/opencode-sandbox.1")" "skills import SOURCE" "opencode-sandbox.1 has the commands"
# The help text and the man page are one source: the same synopsis line.
expect_contains "$("$BUILD_DIR/opencode-sandbox" help doctor)" \
	"usage: opencode-sandbox doctor [--json] [--project PATH]" "help doctor, from the same source"

finish
