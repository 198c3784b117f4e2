//! The progress bar of fleet renders: drawn on stderr only when it is a terminal, and only once
//! a render has run long enough to be worth watching, so that scripts, CI logs and quick
//! renders never see it.

use std::io::IsTerminal as _;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long a render runs before the bar appears.
const DELAY: Duration = Duration::from_millis(400);

/// A [`aiml::render::Progress`] that draws an indicatif bar on a terminal.
pub(super) struct Bar {
    bar: ProgressBar,
    /// When phase 2 started; `None` on a non-terminal (never drawn).
    started: Mutex<Option<Instant>>,
    terminal: bool,
}

impl Bar {
    /// A bar for stderr, if stderr is a terminal (otherwise it stays hidden).
    pub(super) fn stderr() -> Self {
        Self {
            bar: ProgressBar::hidden(),
            started: Mutex::new(None),
            terminal: std::io::stderr().is_terminal(),
        }
    }
}

impl aiml::render::Progress for Bar {
    fn start(&self, total: usize) {
        self.bar.set_length(total as u64);
        let style = ProgressStyle::with_template("{bar:40} {pos}/{len} blueprints {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        self.bar.set_style(style);
        if self.terminal && total > 1 {
            *self.started.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        }
    }

    fn advance(&self) {
        self.bar.inc(1);
        let started = *self.started.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(started) = started
            && self.bar.is_hidden()
            && started.elapsed() >= DELAY
        {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
