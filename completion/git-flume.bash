# bash completion for git flume (installed by make install). git's own
# completion calls _git_flume for `git flume …`; `git-flume …` is bound
# directly. Candidates come from `git flume complete`, which knows the
# commands and the repository's places.

_git_flume() {
	local cur words=() i start=2
	cur="${COMP_WORDS[COMP_CWORD]}"
	[[ ${COMP_WORDS[0]} == git-flume ]] && start=1
	for ((i = start; i < COMP_CWORD; i++)); do
		words+=("${COMP_WORDS[i]}")
	done
	local IFS=$'\n'
	COMPREPLY=($(compgen -W "$(git flume complete "${words[@]}" 2>/dev/null)" -- "$cur"))
}

complete -o default -F _git_flume git-flume
