//! Shell completion: `kubectl aiml completion bash|zsh|fish|kubectl` prints a small hook,
//! and the hidden `__complete` command answers it.
//!
//! The hooks hold no knowledge of the command line: at each TAB they run
//! `kubectl-aiml __complete -- WORD… CURRENT` and show what it prints, one candidate a line
//! (`value<TAB>description`), then `:N`, a directive in Cobra's numbering (no space after,
//! no file fallback, directories only). That is the protocol kubectl (1.26 or later) speaks
//! with a plugin's `kubectl_complete-<plugin>` executable, so the same answer serves
//! `kubectl-aiml <TAB>`, `kubectl aiml <TAB>` and every shell. It was chosen over
//! clap_complete's static scripts, which cannot list blueprint names or catalog values, and
//! over its dynamic engine (`unstable-dynamic`, an unstable API, whose value completers see
//! neither `--repo` nor kubectl).
//!
//! The answer walks the clap definition ([`super::Cli`]), so new subcommands and flags
//! complete without changes here; only arguments whose values come from the repository or
//! the catalog are named in [`values`].

use std::path::PathBuf;

use clap::{Arg, Command};
use clap::{CommandFactory, ValueEnum};

use super::{Context, Outcome, explain, schema};

/// The shells (and kubectl) a hook is printed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum Shell {
    /// bash 4 or later: `source <(kubectl-aiml completion bash)`.
    Bash,
    /// zsh: `mkdir -p ~/.zfunc && kubectl-aiml completion zsh > ~/.zfunc/_kubectl-aiml`, with
    /// `fpath=(~/.zfunc $fpath)` in `~/.zshrc` before `compinit`.
    Zsh,
    /// fish: `mkdir -p ~/.config/fish/completions && kubectl-aiml completion fish >
    /// ~/.config/fish/completions/kubectl-aiml.fish`.
    Fish,
    /// The `kubectl_complete-aiml` executable kubectl runs for `kubectl aiml <TAB>`.
    Kubectl,
}

/// `kubectl aiml completion SHELL`.
pub(super) fn script(context: &Context<'_>, shell: Shell) -> Outcome {
    context.printer.out(match shell {
        Shell::Bash => BASH,
        Shell::Zsh => ZSH,
        Shell::Fish => FISH,
        Shell::Kubectl => KUBECTL,
    });
    Outcome::Success
}

/// Cobra's directives, as kubectl reads them.
mod directive {
    /// Do not add a space after the candidate.
    pub(super) const NO_SPACE: u32 = 2;
    /// Do not fall back to file names when there is no candidate.
    pub(super) const NO_FILE: u32 = 4;
    /// Complete directory names only.
    pub(super) const DIRECTORIES: u32 = 16;
    /// Keep the candidates' order.
    pub(super) const KEEP_ORDER: u32 = 32;
}

/// Candidates for the last word, and how the shell treats them.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Answer {
    /// `(value, description)`.
    candidates: Vec<(String, String)>,
    directive: u32,
}

impl Answer {
    fn files() -> Self {
        Self::default()
    }

    fn of(candidates: Vec<(String, String)>, directive: u32) -> Self {
        Self {
            candidates,
            directive,
        }
    }

    /// Keeps the candidates that start with `prefix`.
    fn starting_with(mut self, prefix: &str) -> Self {
        self.candidates
            .retain(|(value, _)| value.starts_with(prefix));
        self
    }

    fn render(&self) -> String {
        let mut text = String::new();
        for (value, description) in &self.candidates {
            // One candidate a line: a value or description must not break the protocol.
            let clean = |s: &str| s.replace(['\n', '\t', '\r'], " ");
            if description.is_empty() {
                text.push_str(&format!("{}\n", clean(value)));
            } else {
                text.push_str(&format!("{}\t{}\n", clean(value), clean(description)));
            }
        }
        text.push_str(&format!(":{}\n", self.directive));
        text
    }
}

/// `kubectl-aiml __complete -- WORD… CURRENT`: prints the candidates for CURRENT.
pub(super) fn run(context: &Context<'_>, words: &[String]) -> Outcome {
    let mut root = super::Cli::command();
    root.build();
    let answer = complete(context, &root, words);
    context.printer.out(&answer.render());
    Outcome::Success
}

/// What was typed before the word being completed.
struct Typed<'c> {
    command: &'c Command,
    /// The flag whose value is the current word.
    pending: Option<&'c Arg>,
    /// Positional values seen in `command`.
    positionals: Vec<&'c str>,
    /// `--repo DIR`, for blueprint names.
    repo: Option<PathBuf>,
}

fn complete(context: &Context<'_>, root: &Command, words: &[String]) -> Answer {
    let (current, done) = match words.split_last() {
        Some((current, done)) => (current.as_str(), done),
        None => ("", &[][..]),
    };
    let typed = walk(root, done);
    let command = typed.command;
    if let Some(flag) = typed.pending {
        return values(context, &typed, flag, current);
    }
    if let Some((name, value)) = current
        .split_once('=')
        .filter(|_| current.starts_with("--"))
    {
        let Some(flag) = long(command, &name[2..]) else {
            return Answer::of(Vec::new(), directive::NO_FILE);
        };
        let mut answer = values(context, &typed, flag, value);
        for (candidate, _) in &mut answer.candidates {
            *candidate = format!("{name}={candidate}");
        }
        return answer;
    }
    if current.starts_with('-') {
        let flags = command
            .get_arguments()
            .filter(|arg| !arg.is_hide_set())
            .filter_map(|arg| Some((format!("--{}", arg.get_long()?), help(arg))))
            .collect();
        return Answer::of(flags, directive::NO_FILE).starting_with(current);
    }
    let has_subcommands = command.get_subcommands().next().is_some();
    if has_subcommands && typed.positionals.is_empty() {
        let names = command
            .get_subcommands()
            .filter(|sub| !sub.is_hide_set())
            .map(|sub| {
                let about = sub.get_about().map(ToString::to_string).unwrap_or_default();
                (sub.get_name().to_string(), about)
            })
            .collect();
        return Answer::of(names, directive::NO_FILE).starting_with(current);
    }
    let positional: Vec<&Arg> = command
        .get_positionals()
        .filter(|arg| !arg.is_hide_set())
        .collect();
    let index = typed.positionals.len();
    // A positional taking many values (`render NAME…`) takes every later word too.
    let arg = positional.get(index).copied().or_else(|| {
        positional.iter().copied().find(|arg| {
            arg.get_num_args()
                .is_some_and(|range| range.max_values() > 1)
        })
    });
    match arg {
        Some(arg) => values(context, &typed, arg, current),
        None => Answer::of(Vec::new(), directive::NO_FILE),
    }
}

/// Follows the words typed so far: subcommands, flags and the values they take.
fn walk<'c>(root: &'c Command, done: &'c [String]) -> Typed<'c> {
    let mut typed = Typed {
        command: root,
        pending: None,
        positionals: Vec::new(),
        repo: None,
    };
    let mut only_positionals = false;
    for word in done {
        if let Some(flag) = typed.pending.take() {
            if flag.get_id() == "repo" {
                typed.repo = Some(PathBuf::from(word));
            }
            continue;
        }
        if only_positionals || word == "-" || !word.starts_with('-') {
            let sub = (typed.positionals.is_empty() && !only_positionals)
                .then(|| {
                    typed.command.get_subcommands().find(|sub| {
                        sub.get_name() == word || sub.get_all_aliases().any(|a| a == word)
                    })
                })
                .flatten();
            match sub {
                Some(sub) => typed.command = sub,
                None => typed.positionals.push(word),
            }
            continue;
        }
        if word == "--" {
            only_positionals = true;
        } else if let Some(name) = word.strip_prefix("--") {
            let (name, inline) = match name.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (name, None),
            };
            let flag = long(typed.command, name);
            match (flag, inline) {
                (Some(flag), Some(value)) if flag.get_id() == "repo" => {
                    typed.repo = Some(PathBuf::from(value));
                }
                (Some(flag), None) if takes_value(flag) => typed.pending = Some(flag),
                _ => {}
            }
        } else {
            // `-o`, or a cluster of short flags (`-mMESSAGE`): a value-taking flag takes the
            // rest of the word, or the next word when it ends the cluster.
            let shorts: Vec<char> = word.chars().skip(1).collect();
            for (at, short) in shorts.iter().enumerate() {
                let flag = typed
                    .command
                    .get_arguments()
                    .find(|arg| arg.get_short() == Some(*short));
                if let Some(flag) = flag.filter(|flag| takes_value(flag)) {
                    if at + 1 == shorts.len() {
                        typed.pending = Some(flag);
                    }
                    break;
                }
            }
        }
    }
    typed
}

fn long<'c>(command: &'c Command, name: &str) -> Option<&'c Arg> {
    command.get_arguments().find(|arg| {
        arg.get_long() == Some(name)
            || arg
                .get_all_aliases()
                .is_some_and(|aliases| aliases.contains(&name))
    })
}

fn takes_value(arg: &Arg) -> bool {
    arg.get_action().takes_values()
}

fn help(arg: &Arg) -> String {
    arg.get_help()
        .map(|help| explain::first_line(&help.to_string()).to_string())
        .unwrap_or_default()
}

/// Candidates for a value of `arg`: its clap choices, or what the repository and the
/// catalog know.
fn values(context: &Context<'_>, typed: &Typed<'_>, arg: &Arg, current: &str) -> Answer {
    let choices: Vec<(String, String)> = arg
        .get_possible_values()
        .iter()
        .filter(|value| !value.is_hide_set())
        .map(|value| {
            let help = value
                .get_help()
                .map(ToString::to_string)
                .unwrap_or_default();
            (value.get_name().to_string(), help)
        })
        .collect();
    if !choices.is_empty() {
        return Answer::of(choices, directive::NO_FILE).starting_with(current);
    }
    let command = typed.command.get_name();
    match (command, arg.get_id().as_str()) {
        (_, "repo" | "schemas") => Answer::of(Vec::new(), directive::DIRECTORIES),
        ("render", "names") => {
            let listed = &typed.positionals;
            let names = blueprint_names(context, typed.repo.as_ref())
                .into_iter()
                .filter(|(name, _)| !listed.contains(&name.as_str()))
                .collect();
            Answer::of(names, directive::NO_FILE).starting_with(current)
        }
        ("graph", "name") => Answer::of(
            blueprint_names(context, typed.repo.as_ref()),
            directive::NO_FILE,
        )
        .starting_with(current),
        ("rules", "id") | (_, "ignore") => {
            let ids = aiml::rules::all()
                .into_iter()
                .map(|(_, rule)| (rule.id.to_string(), rule.summary.to_string()))
                .collect();
            Answer::of(ids, directive::NO_FILE).starting_with(current)
        }
        ("schema", "kind") | ("blueprints", "schema") => {
            Answer::of(kinds(context), directive::NO_FILE).starting_with(current)
        }
        ("explain", "target") => explain_paths(context, current),
        ("explain", "value") => {
            let target = typed.positionals.first().copied().unwrap_or_default();
            field_values(context, target).starting_with(current)
        }
        (_, "paths") => Answer::files(),
        _ => Answer::of(Vec::new(), directive::NO_FILE),
    }
}

fn kinds(context: &Context<'_>) -> Vec<(String, String)> {
    context
        .registry
        .iter()
        .map(|kind| (kind.name().to_string(), kind.summary().to_string()))
        .collect()
}

/// `name → kind` of the repository's blueprints; nothing when there is no repository.
fn blueprint_names(context: &Context<'_>, repo: Option<&PathBuf>) -> Vec<(String, String)> {
    let Some(root) = repo.cloned().or_else(|| context.root().ok()) else {
        return Vec::new();
    };
    let Ok(loaded) = aiml::input::load(&root, &context.registry, context.limits.max_file_size)
    else {
        return Vec::new();
    };
    let mut names: Vec<(String, String)> = loaded
        .blueprints(&context.registry)
        .iter()
        .map(|b| (b.name.to_string(), b.kind.to_string()))
        .collect();
    names.sort();
    names.dedup_by(|a, b| a.0 == b.0);
    names
}

/// `Kind` → `Kind.`; `Kind.spec.t` → the fields of `spec` starting with `t`, those with
/// sub-fields ending in `.` so the next TAB goes on.
fn explain_paths(context: &Context<'_>, current: &str) -> Answer {
    let Some((head, partial)) = current.rsplit_once('.') else {
        let lower = current.to_ascii_lowercase();
        let kinds = kinds(context)
            .into_iter()
            .filter(|(name, _)| name.to_ascii_lowercase().starts_with(&lower))
            .map(|(name, summary)| (format!("{name}."), summary))
            .collect();
        return Answer::of(kinds, directive::NO_SPACE | directive::NO_FILE);
    };
    with_field(context, head, |document, view| {
        let fields = view
            .fields()
            .iter()
            .filter(|field| field.name.starts_with(partial))
            .map(|field| {
                let inner = explain::View::of(document, field.schema);
                let more = if inner.fields().is_empty() { "" } else { "." };
                let doc = inner
                    .description()
                    .map(|d| explain::first_line(&d).to_string())
                    .unwrap_or_default();
                (format!("{head}.{}{more}", field.name), doc)
            })
            .collect();
        Answer::of(
            fields,
            directive::NO_SPACE | directive::NO_FILE | directive::KEEP_ORDER,
        )
    })
}

/// The allowed values of the field `target` names (`MultisliceTraining.spec.tpu.type`: the
/// catalog's TPU types).
fn field_values(context: &Context<'_>, target: &str) -> Answer {
    with_field(context, target, |_, view| {
        let values = view
            .allowed()
            .0
            .iter()
            .map(|(value, doc)| {
                let text = match value {
                    serde_json::Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                (
                    text,
                    doc.map(|d| explain::first_line(d).to_string())
                        .unwrap_or_default(),
                )
            })
            .collect();
        Answer::of(values, directive::NO_FILE | directive::KEEP_ORDER)
    })
}

/// Answers about the field `target` names (`Kind.spec.x`) with `answer`, given the kind's
/// schema document and the field's view; nothing when the kind or the field is unknown.
fn with_field(
    context: &Context<'_>,
    target: &str,
    answer: impl FnOnce(&serde_json::Value, explain::View<'_>) -> Answer,
) -> Answer {
    let (kind_name, path) = explain::split(target);
    let Ok(kind) = schema::kind(&context.registry, kind_name) else {
        return Answer::of(Vec::new(), directive::NO_FILE);
    };
    let document = schema::document(kind);
    let Ok(view) = explain::resolve(&document, &path) else {
        return Answer::of(Vec::new(), directive::NO_FILE);
    };
    answer(&document, view)
}

const BASH: &str = r#"# bash completion for kubectl-aiml. Load it with:
#   source <(kubectl-aiml completion bash)
# (for `kubectl aiml <TAB>`, see `kubectl-aiml completion kubectl`).
_kubectl_aiml() {
    local i word args=() glue=0
    # Readline splits `--flag=value` at `=`: join the pieces back.
    for ((i = 1; i <= COMP_CWORD; i++)); do
        word=${COMP_WORDS[i]}
        if [[ $word == "=" && ${#args[@]} -gt 0 && ${args[${#args[@]}-1]} == --* ]]; then
            args[${#args[@]}-1]+="="
            glue=1
        elif ((glue)); then
            args[${#args[@]}-1]+=$word
            glue=0
        else
            args+=("$word")
        fi
    done
    ((${#args[@]})) || args=("")
    local lines=() line directive=0
    while IFS= read -r line; do lines+=("$line"); done < <(kubectl-aiml __complete -- "${args[@]}" 2>/dev/null)
    local last=$((${#lines[@]} - 1))
    if ((last >= 0)) && [[ ${lines[last]} == :* ]]; then
        directive=${lines[last]#:}
        unset "lines[last]"
    fi
    COMPREPLY=()
    ((directive & 1)) && return 0
    local current=${args[${#args[@]}-1]} prefix=""
    [[ $current == --*=* ]] && prefix=${current%%=*}=
    if ((directive & 16)); then
        while IFS= read -r line; do COMPREPLY+=("$line"); done < <(compgen -d -- "${current#"$prefix"}")
        return 0
    fi
    for line in "${lines[@]}"; do
        line=${line%%$'\t'*}
        COMPREPLY+=("${line#"$prefix"}")
    done
    if ((${#COMPREPLY[@]} == 0)); then
        ((directive & 4)) || compopt -o default 2>/dev/null
        return 0
    fi
    ((directive & 2)) && compopt -o nospace 2>/dev/null
    return 0
}
complete -F _kubectl_aiml kubectl-aiml
"#;

const ZSH: &str = r#"#compdef kubectl-aiml
# zsh completion for kubectl-aiml. Install it with:
#   mkdir -p ~/.zfunc && kubectl-aiml completion zsh > ~/.zfunc/_kubectl-aiml
# with `fpath=(~/.zfunc $fpath)` in ~/.zshrc before compinit,
# or load it for this shell: source <(kubectl-aiml completion zsh)
_kubectl_aiml() {
    local -a args lines values shown
    local line value directive=0
    args=("${(@)words[2,CURRENT]}")
    lines=("${(@f)$(kubectl-aiml __complete -- "${args[@]}" 2>/dev/null)}")
    if [[ ${lines[-1]} == :* ]]; then
        directive=${lines[-1]#:}
        lines[-1]=()
    fi
    (( directive & 1 )) && return 1
    if (( directive & 16 )); then
        _path_files -/
        return
    fi
    for line in "${lines[@]}"; do
        [[ -z $line ]] && continue
        value=${line%%$'\t'*}
        values+=("$value")
        if [[ $line == *$'\t'* ]]; then
            shown+=("$value  -- ${line#*$'\t'}")
        else
            shown+=("$value")
        fi
    done
    if (( ${#values} == 0 )); then
        (( directive & 4 )) && return 1
        _files
        return
    fi
    local -a suffix order
    (( directive & 2 )) && suffix=(-S '')
    (( directive & 32 )) && order=(-V kubectl-aiml)
    compadd "${suffix[@]}" "${order[@]}" -l -d shown -a values
}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
    _kubectl_aiml "$@"
else
    compdef _kubectl_aiml kubectl-aiml
fi
"#;

const FISH: &str = r#"# fish completion for kubectl-aiml. Install it with:
#   mkdir -p ~/.config/fish/completions
#   kubectl-aiml completion fish > ~/.config/fish/completions/kubectl-aiml.fish
function __kubectl_aiml_complete
    set -l args (commandline -opc)
    set -e args[1]
    set -a args (commandline -ct)
    set -l lines (kubectl-aiml __complete -- $args 2>/dev/null)
    set -l directive 0
    if test (count $lines) -gt 0; and string match -qr '^:[0-9]+$' -- $lines[-1]
        set directive (string sub -s 2 -- $lines[-1])
        set -e lines[-1]
    end
    if test (math "bitand($directive, 1)") -ne 0
        return
    end
    if test (math "bitand($directive, 16)") -ne 0
        __fish_complete_directories (commandline -ct)
        return
    end
    if test (count $lines) -eq 0; and test (math "bitand($directive, 4)") -eq 0
        __fish_complete_path (commandline -ct)
        return
    end
    printf '%s\n' $lines
end
complete -c kubectl-aiml -f -a '(__kubectl_aiml_complete)'
"#;

const KUBECTL: &str = r#"#!/bin/sh
# kubectl (1.26 or later) runs `kubectl_complete-aiml` from PATH to complete
# `kubectl aiml <TAB>`, and reads the same answer as kubectl-aiml's own hooks. Install:
#   mkdir -p ~/.local/bin
#   kubectl-aiml completion kubectl > ~/.local/bin/kubectl_complete-aiml
#   chmod +x ~/.local/bin/kubectl_complete-aiml
exec kubectl-aiml __complete -- "$@"
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_end_with_the_directive_and_keep_one_candidate_a_line() {
        let answer = Answer::of(
            vec![
                ("a\nb".into(), "two\tparts".into()),
                ("c".into(), String::new()),
            ],
            directive::NO_FILE,
        );
        assert_eq!(answer.render(), "a b\ttwo parts\nc\n:4\n");
    }
}
