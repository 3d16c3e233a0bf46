//! Generates the `i18n` module from `locales/{zh,en}.json` with leptos_i18n_build (the 0.6 way; the
//! `load_locales!` macro is deprecated). Simplified Chinese is the default locale.

use leptos_i18n_build::{Config, ParseOptions, TranslationsInfos};
use std::error::Error;
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn Error>> {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=Cargo.toml");

    let out = PathBuf::from(std::env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?).join("i18n");
    // `interpolate_display` lets `t_string!` fill `{{ name }}` into plain strings (for aria labels).
    let options = ParseOptions::default().interpolate_display(true);
    let cfg = Config::new("zh")?.add_locale("en")?.parse_options(options);
    let infos = TranslationsInfos::parse(cfg)?;
    infos.emit_diagnostics();
    infos.rerun_if_locales_changed();
    infos.generate_i18n_module(out)?;
    Ok(())
}
