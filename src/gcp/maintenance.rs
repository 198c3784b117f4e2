//! When GKE may upgrade a cluster the blueprint creates, and when it must not: the recurring
//! maintenance window (a default one for every cluster) and the exclusions a long training
//! run needs.
//!
//! Its own module because its checks are about time, not clusters: GKE takes RFC 3339 times
//! and refuses windows and exclusions that end before they start, and `NO_UPGRADES`
//! exclusions longer than 30 days
//! (<https://cloud.google.com/kubernetes-engine/docs/concepts/maintenance-windows-and-exclusions>).

use std::collections::BTreeSet;

use super::spec::{ExclusionScope, MaintenanceSpec};
use super::{MaintenanceExclusion, MaintenanceWindow, error_at, rule};
use crate::plan::Planner;

/// The default window: Saturdays and Sundays, 01:00 to 09:00 UTC (night in the Americas,
/// morning in Europe and Asia). Eight hours twice a week leave at least 64 hours in any 32
/// days, above the 48 GKE requires of a window. The first occurrence is a fixed Saturday, so
/// output never depends on the day it is rendered.
const DEFAULT_WINDOW: (&str, &str, &str) = (
    "2025-01-04T01:00:00Z",
    "2025-01-04T09:00:00Z",
    "FREQ=WEEKLY;BYDAY=SA,SU",
);

/// GKE's longest `NO_UPGRADES` exclusion, in days.
const NO_UPGRADES_MAX_DAYS: i64 = 30;

/// The window and exclusions of `spec` (at `field`, e.g. `spec.cluster.maintenance`), checked.
pub(super) fn plan(
    planner: &mut Planner<'_>,
    spec: &MaintenanceSpec,
    field: &str,
) -> (MaintenanceWindow, Vec<MaintenanceExclusion>) {
    let window = match &spec.window {
        Some(window) => {
            let field = format!("{field}.window");
            in_order(planner, &field, &window.start, &window.end);
            if !window.recurrence.starts_with("FREQ=") {
                let d = planner.error(
                    rule::MAINTENANCE,
                    &format!("{field}.recurrence"),
                    format!("`{}` is no RFC 5545 recurrence", window.recurrence),
                );
                d.found = Some(window.recurrence.clone());
                d.expected = Some("e.g. `FREQ=WEEKLY;BYDAY=SA,SU` or `FREQ=DAILY`".into());
            }
            MaintenanceWindow {
                start: window.start.clone(),
                end: window.end.clone(),
                recurrence: window.recurrence.clone(),
            }
        }
        None => MaintenanceWindow {
            start: DEFAULT_WINDOW.0.into(),
            end: DEFAULT_WINDOW.1.into(),
            recurrence: DEFAULT_WINDOW.2.into(),
        },
    };
    let mut names = BTreeSet::new();
    let exclusions = spec
        .exclusions
        .iter()
        .enumerate()
        .map(|(index, exclusion)| {
            let field = format!("{field}.exclusions[{index}]");
            if exclusion.name.trim().is_empty() || !names.insert(exclusion.name.clone()) {
                let d = error_at(
                    planner,
                    rule::MAINTENANCE,
                    &format!("{field}.name"),
                    format!(
                        "maintenance exclusion name `{}` is empty or used twice",
                        exclusion.name
                    ),
                );
                d.fix = Some("give each exclusion a name of its own".into());
            }
            let scope = exclusion
                .scope
                .unwrap_or(ExclusionScope::NoMinorOrNodeUpgrades);
            let days = in_order(planner, &field, &exclusion.start, &exclusion.end)
                .map(|seconds| seconds / 86_400);
            if scope == ExclusionScope::NoUpgrades
                && let Some(days) = days.filter(|days| *days > NO_UPGRADES_MAX_DAYS)
            {
                let d = error_at(
                    planner,
                    rule::MAINTENANCE,
                    &format!("{field}.end"),
                    format!(
                        "exclusion `{}` holds back every upgrade for {days} days; GKE allows {NO_UPGRADES_MAX_DAYS}",
                        exclusion.name
                    ),
                );
                d.fix = Some(
                    "use `scope: NO_MINOR_OR_NODE_UPGRADES` (the default: nodes and slices are left alone until the minor version's end of support), or a shorter period".into(),
                );
            }
            MaintenanceExclusion {
                name: exclusion.name.clone(),
                start: exclusion.start.clone(),
                end: exclusion.end.clone(),
                scope,
            }
        })
        .collect();
    (window, exclusions)
}

/// Checks that `start` and `end` are UTC times and `end` is later; returns the seconds
/// between them when both parse.
fn in_order(planner: &mut Planner<'_>, field: &str, start: &str, end: &str) -> Option<i64> {
    let parsed = [("start", start), ("end", end)].map(|(key, text)| {
        let seconds = utc_seconds(text);
        if seconds.is_none() {
            let d = error_at(
                planner,
                rule::MAINTENANCE,
                &format!("{field}.{key}"),
                format!("`{text}` is no UTC time"),
            );
            d.found = Some(text.to_string());
            d.expected = Some("`YYYY-MM-DDTHH:MM:SSZ`, e.g. `2026-12-01T00:00:00Z`".into());
        }
        seconds
    });
    let [Some(start_seconds), Some(end_seconds)] = parsed else {
        return None;
    };
    if end_seconds <= start_seconds {
        let d = error_at(
            planner,
            rule::MAINTENANCE,
            &format!("{field}.end"),
            format!("`{end}` is not after `{start}`"),
        );
        d.fix = Some("swap them, or move the end later".into());
        return None;
    }
    Some(end_seconds - start_seconds)
}

/// Seconds since 1970 of `YYYY-MM-DDTHH:MM:SSZ`, the one form of RFC 3339 accepted (UTC, no
/// fractions), or `None`.
pub(crate) fn utc_seconds(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    let shape = bytes.len() == 20
        && bytes.iter().enumerate().all(|(i, b)| match i {
            4 | 7 => *b == b'-',
            10 => *b == b'T',
            13 | 16 => *b == b':',
            19 => *b == b'Z',
            _ => b.is_ascii_digit(),
        });
    if !shape {
        return None;
    }
    let number = |range: std::ops::Range<usize>| text[range].parse::<i64>().ok();
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    if day == 0 || day > days_in_month || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + hour * 3_600 + minute * 60 + second)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::{DEFAULT_WINDOW, utc_seconds};

    #[test]
    fn utc_times_are_read_strictly() {
        assert_eq!(utc_seconds("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(utc_seconds("2000-03-01T00:00:00Z"), Some(951_868_800));
        assert_eq!(utc_seconds("2024-02-29T12:30:00Z"), Some(1_709_209_800));
        for bad in [
            "2025-02-29T00:00:00Z",
            "2025-13-01T00:00:00Z",
            "2025-01-01T24:00:00Z",
            "2025-01-01 00:00:00Z",
            "2025-01-01T00:00:00+01:00",
            "2025-01-01T00:00:00.5Z",
            "tomorrow",
        ] {
            assert_eq!(utc_seconds(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_default_window_is_eight_hours_starting_on_a_saturday() {
        let (start, end) = (
            utc_seconds(DEFAULT_WINDOW.0).unwrap(),
            utc_seconds(DEFAULT_WINDOW.1).unwrap(),
        );
        assert_eq!(end - start, 8 * 3_600);
        // 1970-01-01 was a Thursday: `(days + 5) % 7` is 0 on Saturdays.
        assert_eq!((start / 86_400 + 5) % 7, 0, "a Saturday");
    }
}
