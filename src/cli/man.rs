//! `kubectl aiml man`: the manual page, in roff, from the clap definition.
//!
//! One page, `kubectl-aiml(1)`: clap_mangen's page of the main command (synopsis, global
//! options, the list of commands, version), then a section per command with its
//! description, usage, options and examples, so that `man kubectl-aiml` is the whole
//! reference. Nothing is dated: the page is a pure function of the binary.

use clap::{Arg, Command, CommandFactory};
use clap_mangen::roff::{Roff, bold, italic, roman};

use super::{Context, Outcome};

/// `kubectl aiml man`.
pub(super) fn run(context: &Context<'_>) -> anyhow::Result<Outcome> {
    context.printer.out(&page(super::Cli::command())?);
    Ok(Outcome::Success)
}

/// The page for `command` and its visible subcommands.
pub(super) fn page(command: Command) -> anyhow::Result<String> {
    let mut command = command.disable_help_subcommand(true);
    command.build();
    let mut out = Vec::new();
    clap_mangen::Man::new(command.clone())
        .title("KUBECTL-AIML")
        .manual("kubectl aiml")
        .render(&mut out)?;
    let mut roff = Roff::new();
    for sub in command
        .get_subcommands_mut()
        .filter(|sub| !sub.is_hide_set())
    {
        let name = sub.get_name().to_string();
        roff.control(
            "SH",
            [format!("KUBECTL AIML {}", name.to_uppercase()).as_str()],
        );
        if let Some(about) = sub.get_long_about().or_else(|| sub.get_about()) {
            for line in about.to_string().lines() {
                roff.text([roman(line)]);
            }
        }
        let usage = sub.render_usage().to_string();
        let usage = usage.trim_start_matches("Usage:").trim();
        roff.control("PP", []).text([bold(usage)]);
        let own: Vec<&Arg> = sub
            .get_arguments()
            .filter(|arg| !arg.is_hide_set() && !arg.is_global_set())
            .filter(|arg| !matches!(arg.get_id().as_str(), "help" | "version"))
            .collect();
        for arg in own {
            roff.control("TP", []);
            roff.text(flag(arg));
            if let Some(help) = arg.get_long_help().or_else(|| arg.get_help()) {
                roff.text([roman(help.to_string())]);
            }
            let values: Vec<String> = arg
                .get_possible_values()
                .iter()
                .filter(|value| !value.is_hide_set())
                .map(|value| value.get_name().to_string())
                .collect();
            if !values.is_empty() {
                roff.text([roman(format!(" [possible values: {}]", values.join(", ")))]);
            }
        }
        if let Some(after) = sub.get_after_long_help().or_else(|| sub.get_after_help()) {
            roff.control("PP", []).control("nf", []);
            for line in after.to_string().lines() {
                roff.text([roman(line)]);
            }
            roff.control("fi", []);
        }
    }
    let mut text = String::from_utf8(out)?;
    // clap_mangen points at one page per command (`kubectl-aiml-render(1)`); here they are
    // sections of this page, named as typed. Its heading for `after_help` is `EXTRA`.
    for sub in command.get_subcommands() {
        let name = sub.get_name();
        text = text.replace(
            &format!("kubectl\\-aiml\\-{}(1)", name.replace('-', "\\-")),
            &format!("\\fBkubectl aiml {}\\fR", name.replace('-', "\\-")),
        );
    }
    text = text.replace(".SH EXTRA\n", ".SH EXAMPLES\n");
    text.push_str(&roff.to_roff());
    Ok(text)
}

/// `--check`, `-m, --message <MESSAGE>`, `[NAMES]...`, in man-page fonts.
fn flag(arg: &Arg) -> Vec<clap_mangen::roff::Inline> {
    let value = arg
        .get_value_names()
        .and_then(|names| names.first())
        .map_or_else(|| arg.get_id().as_str().to_uppercase(), ToString::to_string);
    if arg.is_positional() {
        return vec![italic(value)];
    }
    let mut parts = Vec::new();
    if let Some(short) = arg.get_short() {
        parts.push(bold(format!("-{short}")));
        if arg.get_long().is_some() {
            parts.push(roman(", "));
        }
    }
    if let Some(long) = arg.get_long() {
        parts.push(bold(format!("--{long}")));
    }
    if arg.get_action().takes_values() {
        parts.push(roman(" "));
        parts.push(italic(value));
    }
    parts
}
