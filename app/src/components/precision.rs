//! Precision in the reader's language: what a form offers on this server and why (the CPU's bfloat16
//! tier and the measurement behind the default), and what a run uses and why (asked, or measured at its
//! start for `auto`). bf16 is faster than fp32 only on some hardware, so a choice without its figures
//! would be a trap (issue 34).

use contracts::precision::{PrecisionAdvice, PrecisionChoice, PrecisionProbe, PrecisionReason};
use leptos::prelude::*;

use crate::i18n::*;

/// The `<option>`s of a precision select, `selected` chosen: `auto` says it measures, and bf16 says
/// when it was measured slower here.
pub fn precision_options(
    choices: &'static [&'static str],
    selected: String,
    advice: Option<PrecisionAdvice>,
) -> impl IntoView {
    let i18n = use_i18n();
    let bf16_slower = advice
        .as_ref()
        .and_then(|a| a.probe.as_ref())
        .is_some_and(|p| !p.bf16_pays());
    choices
        .iter()
        .map(|p| {
            let label = move || match *p {
                "auto" => t_string!(i18n, precision.auto_option).to_string(),
                "bf16" if bf16_slower => t_string!(i18n, precision.bf16_slower).to_string(),
                other => other.to_string(),
            };
            view! { <option value=*p selected=*p == selected>{label}</option> }
        })
        .collect_view()
}

/// A precision field's hint: what the choices mean, then why the form starts where it does here.
pub fn precision_hint(
    base: impl std::fmt::Display,
    locale: Locale,
    advice: Option<&PrecisionAdvice>,
) -> String {
    match advice {
        Some(advice) => format!("{base} {}", advice_text(locale, advice)),
        None => base.to_string(),
    }
}

/// Why the form starts where it does on this server: the CPU's tier, the measurement, the default.
pub fn advice_text(locale: Locale, advice: &PrecisionAdvice) -> String {
    let tier = match advice.cpu_bf16.as_str() {
        "amx" => td_string!(locale, precision.tier_amx),
        "avx512_bf16" => td_string!(locale, precision.tier_avx512),
        _ => td_string!(locale, precision.tier_none),
    }
    .to_string();
    let measured = advice.probe.as_ref().map(|p| {
        let (ratio, fp32, bf16) = figures(p);
        td_string!(
            locale,
            precision.measured,
            ratio = ratio,
            fp32 = fp32,
            bf16 = bf16,
            rows = p.batch,
            tokens = p.seq_len
        )
        .to_string()
    });
    let default = match (advice.default.as_str(), advice.cpu_bf16.as_str(), &measured) {
        ("auto", _, _) => td_string!(locale, precision.default_auto),
        (_, "none", _) => "",
        (_, _, None) => td_string!(locale, precision.not_measured),
        _ => td_string!(locale, precision.default_fp32),
    }
    .to_string();
    [Some(tier), measured, Some(default)]
        .into_iter()
        .flatten()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A job's or an endpoint's precision as its page shows it: what runs and why once the run said so
/// (`choice`), else what was asked.
pub fn run_precision_text(locale: Locale, asked: &str, choice: Option<&PrecisionChoice>) -> String {
    match choice {
        Some(choice) => choice_text(locale, choice),
        None if asked == "auto" => td_string!(locale, precision.auto_option).to_string(),
        None => asked.to_string(),
    }
}

/// What a run uses and why, in one phrase.
pub fn choice_text(locale: Locale, choice: &PrecisionChoice) -> String {
    let precision = choice.precision.clone();
    match (choice.reason, &choice.probe) {
        (PrecisionReason::Asked, _) => {
            td_string!(locale, precision.choice_asked, precision = precision).to_string()
        }
        (PrecisionReason::Resumed, _) => {
            td_string!(locale, precision.choice_resumed, precision = precision).to_string()
        }
        (PrecisionReason::NoNativeBf16, _) => {
            td_string!(locale, precision.choice_no_native).to_string()
        }
        (PrecisionReason::GpuBeforeAmpere, _) => {
            td_string!(locale, precision.choice_gpu_old).to_string()
        }
        (PrecisionReason::Measured, None) => precision,
        (PrecisionReason::Measured, Some(probe)) => {
            let (ratio, fp32, bf16) = figures(probe);
            td_string!(
                locale,
                precision.choice_measured,
                precision = precision,
                ratio = ratio,
                fp32 = fp32,
                bf16 = bf16
            )
            .to_string()
        }
    }
}

/// bf16's speed as a multiple of fp32's, and both times per batch, as shown.
fn figures(p: &PrecisionProbe) -> (String, String, String) {
    (
        format!("{:.2}", p.speedup()),
        format!("{:.1}", p.fp32_ms),
        format!("{:.1}", p.bf16_ms),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use contracts::precision::Work;

    fn probe(fp32_ms: f64, bf16_ms: f64) -> PrecisionProbe {
        PrecisionProbe::base_layer(Work::Serve, fp32_ms, bf16_ms)
    }

    fn advice(cpu: &str, default: &str, probe: Option<PrecisionProbe>) -> PrecisionAdvice {
        PrecisionAdvice {
            cpu_bf16: cpu.into(),
            default: default.into(),
            probe,
        }
    }

    #[test]
    fn the_advice_names_the_cpu_the_figures_and_the_default_in_both_languages() {
        let slower = advice("avx512_bf16", "fp32", Some(probe(10.0, 16.0)));
        let en = advice_text(Locale::en, &slower);
        assert!(
            en.contains("AVX512-BF16") && en.contains("0.62") && en.contains("fp32"),
            "{en}"
        );
        let zh = advice_text(Locale::zh, &slower);
        assert!(
            zh.contains("AVX512-BF16") && zh.contains("0.62") && zh.contains("fp32"),
            "{zh}"
        );
        let faster = advice_text(Locale::en, &advice("amx", "auto", Some(probe(25.0, 10.0))));
        assert!(
            faster.contains("AMX") && faster.contains("2.50") && faster.contains("auto"),
            "{faster}"
        );
        let none = advice_text(Locale::zh, &advice("none", "fp32", None));
        assert!(none.contains("bfloat16"), "{none}");
        let failed = advice_text(Locale::en, &advice("amx", "fp32", None));
        assert!(failed.contains("could not be measured"), "{failed}");
    }

    #[test]
    fn a_choice_says_what_runs_and_why() {
        let measured = PrecisionChoice {
            asked: "auto".into(),
            precision: "fp32".into(),
            cpu_bf16: "avx512_bf16".into(),
            reason: PrecisionReason::Measured,
            probe: Some(probe(10.0, 16.0)),
        };
        let en = choice_text(Locale::en, &measured);
        assert!(
            en.starts_with("fp32") && en.contains("0.62") && en.contains("16.0"),
            "{en}"
        );
        let zh = choice_text(Locale::zh, &measured);
        assert!(zh.starts_with("fp32") && zh.contains("0.62"), "{zh}");
        let asked = PrecisionChoice {
            reason: PrecisionReason::Asked,
            precision: "bf16".into(),
            probe: None,
            ..measured
        };
        assert!(choice_text(Locale::en, &asked).starts_with("bf16"));
    }
}
