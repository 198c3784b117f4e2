//! A bound on what evaluating a rule on one value can cost, checked before it runs.
//!
//! The API server stops an expression whose runtime cost passes `PerCallLimit` (1,000,000
//! units; k8s.io/apiserver, pkg/apis/cel/config.go) and refuses the object ("call cost
//! exceeds limit"). The evaluator here has no step counter, so the bound is taken over the
//! expression and the value instead: every node costs one, a call that walks a string costs
//! its length too, `in` and `==` the length of the lists they walk, and a comprehension
//! (`all`, `exists`, `map`, …) costs its body once per element of its range. Sizes are those
//! of the value bound to `self` (its longest list or map, its longest string; a split string
//! has at most one item per character), times one plus the number of concatenations (`+`) the
//! rule writes, the only way a rule grows a value beyond a comprehension's range. The bound
//! errs high, so a rule within it ends quickly; one above it is reported, not run.

use cel::Program;
use cel::Value as Cel;
use cel::common::ast::{EntryExpr, Expr};
use cel::parser::Expression;

/// The API server's per-expression cost limit (`PerCallLimit`).
pub(super) const LIMIT: u64 = 1_000_000;

/// `Ok` when the rule's cost bound on `value` is within [`LIMIT`].
pub(super) fn within_budget(program: &Program, value: &Cel) -> Result<(), String> {
    let mut size = Sizes::default();
    size.measure(value, 0);
    // A value a rule builds is the sum of at most one leaf per concatenation plus one: a
    // data value, a literal, a split string (at most one item per character).
    let growth = 1 + u64::from(concatenations(program.expression()));
    let bounds = Bounds {
        items: size.items.max(1).saturating_mul(growth),
        split: size.items.max(size.chars + 1).saturating_mul(growth),
        chars: size.chars.max(1).saturating_mul(growth),
    };
    let bound = cost(program.expression(), &bounds);
    if bound <= LIMIT {
        Ok(())
    } else {
        Err(format!(
            "its cost on this value may reach {bound} units by the tool's bound, above the API \
             server's limit of {LIMIT} per expression"
        ))
    }
}

/// Bounds on what a rule meets: any list or map's length, the length of a list made by
/// splitting a string, any string's length.
struct Bounds {
    items: u64,
    split: u64,
    chars: u64,
}

#[derive(Default)]
struct Sizes {
    /// Longest list or map.
    items: u64,
    /// Longest string.
    chars: u64,
}

impl Sizes {
    fn measure(&mut self, value: &Cel, depth: usize) {
        if depth > 64 {
            return; // values from YAML are bounded in depth already; this only guards
        }
        match value {
            Cel::List(items) => {
                self.items = self.items.max(items.len() as u64);
                items.iter().for_each(|v| self.measure(v, depth + 1));
            }
            Cel::Map(map) => {
                self.items = self.items.max(map.map.len() as u64);
                map.map.values().for_each(|v| self.measure(v, depth + 1));
            }
            Cel::String(s) => self.chars = self.chars.max(s.len() as u64),
            _ => {}
        }
    }
}

/// The `+` calls a rule writes; those a macro generates to build its result (`map`,
/// `filter`: the accumulator plus one element) add one item per iteration, which the range
/// bounds already.
fn concatenations(e: &Expression) -> u32 {
    let own = match &e.expr {
        Expr::Call(call) if call.func_name == "_+_" => {
            let accumulator = matches!(call.args.first().map(|a| &a.expr), Some(Expr::Ident(name)) if name.starts_with('@') || name.starts_with("__"));
            u32::from(!accumulator)
        }
        _ => 0,
    };
    own + children(e).map(concatenations).sum::<u32>()
}

/// Whether `e` splits a string (or lists a string's matches) somewhere.
fn splits(e: &Expression) -> bool {
    matches!(&e.expr, Expr::Call(call) if matches!(call.func_name.as_str(), "split" | "findAll"))
        || children(e).any(splits)
}

fn children(e: &Expression) -> Box<dyn Iterator<Item = &Expression> + '_> {
    match &e.expr {
        Expr::Call(call) => Box::new(call.target.as_deref().into_iter().chain(call.args.iter())),
        Expr::Comprehension(c) => Box::new(
            [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ]
            .into_iter(),
        ),
        Expr::List(list) => Box::new(list.elements.iter()),
        Expr::Map(map) => Box::new(map.entries.iter().flat_map(entry)),
        Expr::Struct(s) => Box::new(s.entries.iter().flat_map(entry)),
        Expr::Select(select) => Box::new(std::iter::once(select.operand.as_ref())),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => Box::new(std::iter::empty()),
    }
}

fn entry(e: &cel::common::ast::IdedEntryExpr) -> Vec<&Expression> {
    match &e.expr {
        EntryExpr::MapEntry(m) => vec![&m.key, &m.value],
        EntryExpr::StructField(f) => vec![&f.value],
    }
}

/// Calls that walk a string, and their cost per character.
const STRING_CALLS: &[&str] = &[
    "matches",
    "contains",
    "startsWith",
    "endsWith",
    "split",
    "find",
    "findAll",
    "lowerAscii",
    "upperAscii",
    "trim",
    "replace",
    "indexOf",
    "lastIndexOf",
    "substring",
    "charAt",
    "format",
    "join",
    "url",
    "isURL",
    "getScheme",
    "getHost",
    "getHostname",
    "getPort",
    "getEscapedPath",
    "_+_",
    "_<_",
    "_<=_",
    "_>_",
    "_>=_",
    "string",
    "int",
    "double",
    "duration",
    "timestamp",
    "size",
];

/// The bound of evaluating `e` once.
fn cost(e: &Expression, b: &Bounds) -> u64 {
    let inner: u64 = children(e).map(|c| cost(c, b)).fold(0, u64::saturating_add);
    let own = match &e.expr {
        Expr::Comprehension(c) => {
            let range = if splits(&c.iter_range) {
                b.split
            } else {
                b.items
            };
            let once = cost(&c.loop_cond, b).saturating_add(cost(&c.loop_step, b));
            // The body runs once per element; `inner` counted it once already.
            return inner.saturating_add(range.saturating_mul(once));
        }
        // `x in list` compares `x` with every element.
        Expr::Call(call) if call.func_name == "@in" => {
            b.items.saturating_mul(b.chars).saturating_add(1)
        }
        // `==` walks strings, and lists and maps element by element.
        Expr::Call(call) if matches!(call.func_name.as_str(), "_==_" | "_!=_") => {
            b.items.saturating_add(b.chars).saturating_add(1)
        }
        Expr::Call(call) if STRING_CALLS.contains(&call.func_name.as_str()) => {
            b.chars.saturating_add(1)
        }
        _ => 1,
    };
    own.saturating_add(inner)
}
