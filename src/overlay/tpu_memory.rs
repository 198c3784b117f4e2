//! Whether a model's weights fit the high-bandwidth memory of a TPU slice, from the chips of
//! the slice and the catalog's HBM per chip.

use crate::accelerator::TpuPlan;
use crate::plan::Planner;

/// Weights take ~2 bytes per parameter (bf16); they must fit the slice's memory. When they
/// do not, reports `rule` on `spec.tpu.type` with the chips that would hold them.
pub fn weights_fit(
    planner: &mut Planner<'_>,
    rule: &'static str,
    (model, billions): (&str, u32),
    tpu: &TpuPlan,
) -> bool {
    let Some(family) = tpu.family else {
        return false;
    };
    let weights_gb = u64::from(billions) * 2;
    let memory_gb = u64::from(family.hbm_gb()) * u64::from(tpu.chips_per_slice);
    if weights_gb > memory_gb {
        let d = planner.error(
            rule,
            "spec.tpu.type",
            format!(
                "`{model}` needs ~{weights_gb} GB for its weights but a `{}` slice has {memory_gb} GB of HBM",
                tpu.type_name
            ),
        );
        d.found = Some(format!(
            "{} chips x {} GB of {family}",
            tpu.chips_per_slice,
            family.hbm_gb()
        ));
        let chips_needed = weights_gb.div_ceil(u64::from(family.hbm_gb()));
        d.expected = Some(format!("at least {chips_needed} chips of {family}"));
        return false;
    }
    true
}
