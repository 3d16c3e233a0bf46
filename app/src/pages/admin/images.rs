//! Base images on the admin page: the catalog, each image marked present on this machine or not, and
//! the upload of a `docker save` archive (with progress) that brings an image to a server no registry
//! reaches. What Docker loaded is listed, and the catalog is read again.

use leptos::prelude::*;

use crate::api::environments::get_docker_status;
use crate::components::notice::ErrorNotice;
use crate::components::page::Loaded;
use crate::components::upload::{Upload, UploadProgress};
use crate::i18n::*;
use contracts::error::AppError;
use contracts::types::CatalogImage;

/// Where archives go (`POST`, the raw archive as the body).
const LOAD_URL: &str = "/api/v1/admin/images/load";

#[component]
pub fn BaseImages() -> impl IntoView {
    let i18n = use_i18n();
    let loads = RwSignal::new(0u32);
    let status = Resource::new(move || loads.get(), |_| get_docker_status());
    let upload = Upload::new();
    let error = RwSignal::new(None::<AppError>);
    let loaded = RwSignal::new(Vec::<String>::new());
    let file_input = NodeRef::<leptos::html::Input>::new();
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let missing = td_string!(i18n.get_locale_untracked(), admin.images_no_file);
        let Some(picked) = upload.pick(file_input, missing, error) else {
            return;
        };
        loaded.set(Vec::new());
        upload.send(LOAD_URL, &picked, error, move |answer| {
            #[derive(serde::Deserialize)]
            struct Loaded {
                loaded: Vec<String>,
            }
            match serde_json::from_str::<Loaded>(&answer.body) {
                Ok(body) if answer.ok() => {
                    loaded.set(body.loaded);
                    loads.update(|n| *n += 1);
                }
                _ => error.set(Some(answer.error())),
            }
        });
    };
    view! {
        <section class="card" aria-labelledby="images-title" data-testid="base-images">
            <h2 id="images-title">{t!(i18n, admin.images_title)}</h2>
            <p class="hint">{t!(i18n, admin.images_hint)}</p>
            <Loaded load=move || async move { status.await } let:docker>
                <ul class="image-list">
                    {docker.catalog.into_iter().map(|image| view! { <CatalogEntry image /> }).collect_view()}
                </ul>
            </Loaded>
            <form class="form" data-testid="image-load-form" on:submit=on_submit novalidate>
                <div class="field">
                    <label for="image-file">{t!(i18n, admin.images_file)}</label>
                    <input id="image-file" data-testid="image-file" type="file" accept=".tar,application/x-tar"
                        node_ref=file_input on:change=move |_| error.set(None) />
                </div>
                <div class="actions">
                    <button type="submit" class="button button-primary" data-testid="image-load" disabled=move || upload.busy().get()>
                        {t!(i18n, admin.images_load)}
                    </button>
                </div>
                <UploadProgress upload testid="image-progress" processing=move || t!(i18n, admin.images_loading) />
                {move || (!loaded.with(Vec::is_empty)).then(|| view! {
                    <p class="notice notice-success" role="status" data-testid="images-loaded">
                        {move || t_string!(i18n, admin.images_loaded, names = loaded.get().join(", ")).to_string()}
                    </p>
                })}
                {move || error.get().map(|err| view! { <ErrorNotice err /> })}
            </form>
        </section>
    }
}

/// One catalog image: its reference and whether it is here.
#[component]
fn CatalogEntry(image: CatalogImage) -> impl IntoView {
    let i18n = use_i18n();
    let (present, local) = (image.present, image.local);
    let (reference, shown) = (image.reference.clone(), image.reference);
    view! {
        <li data-testid="catalog-image" data-reference=reference data-present=present.to_string()>
            <code>{shown}</code>" "
            <span class="badge" class:badge-ok=present>
                {move || match (present, local) {
                    (true, _) => t_string!(i18n, env_form.present),
                    (false, true) => t_string!(i18n, env_form.built_locally),
                    (false, false) => t_string!(i18n, admin.images_missing),
                }}
            </span>
        </li>
    }
}
