//! Images as Docker holds them: load from an archive, inspect, find by build-hash label, make sure a base
//! is present (pulling it with progress when it is remote), remove. No registry is reachable on Paddock's machines, so a pull must
//! fail fast and say so plainly; local `paddock/…` images are never pulled (they are built, see `base`).

use std::collections::HashMap;

use bollard::query_parameters::{
    CreateImageOptionsBuilder, ImportImageOptionsBuilder, ListImagesOptionsBuilder,
    RemoveImageOptionsBuilder,
};
use futures_util::StreamExt;

use crate::error::{Error, Result};
use crate::labels;
use crate::mirror::Mirror;
use crate::Docker;

/// What Paddock needs to know about an image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageInfo {
    /// `sha256:…`, the lock recorded on an environment version.
    pub id: String,
    pub labels: HashMap<String, String>,
    /// `KEY=value` entries of the image config (preflight reads `CUDA_VERSION` from here).
    pub env: Vec<String>,
    /// Content digests of the filesystem layers, bottom first.
    pub layers: Vec<String>,
    pub tags: Vec<String>,
}

impl Docker {
    /// Loads the images of a `docker save` archive as it streams in (`docker load`): what brings an
    /// image to a machine that no registry reaches. The references it tagged, or the IDs of the
    /// untagged ones; Docker's own refusal (not an archive, a broken layer) is an error.
    pub async fn load_images<S, E>(&self, archive: S) -> Result<Vec<String>>
    where
        S: futures_util::Stream<Item = std::result::Result<bytes::Bytes, E>> + Send + 'static,
        E: Into<Box<dyn std::error::Error + Send + Sync>> + 'static,
    {
        let options = ImportImageOptionsBuilder::default().quiet(true).build();
        let mut answers = self.api().import_image_stream(options, archive, None);
        let mut loaded = Vec::new();
        while let Some(answer) = answers.next().await {
            let info =
                answer.map_err(|e| Error::docker("loading an image archive", "image", "", e))?;
            for line in info.stream.as_deref().unwrap_or_default().lines() {
                let named = line.strip_prefix("Loaded image: ");
                if let Some(reference) = named.or_else(|| line.strip_prefix("Loaded image ID: ")) {
                    loaded.push(reference.trim().to_string());
                }
            }
        }
        Ok(loaded)
    }

    /// Inspects an image by reference or ID.
    pub async fn image_info(&self, reference: &str) -> Result<ImageInfo> {
        let image = self.api().inspect_image(reference).await.map_err(|e| {
            Error::docker(
                format!("inspecting image {reference}"),
                "image",
                reference,
                e,
            )
        })?;
        let config = image.config.unwrap_or_default();
        Ok(ImageInfo {
            id: image.id.unwrap_or_default(),
            labels: config.labels.unwrap_or_default(),
            env: config.env.unwrap_or_default(),
            layers: image.root_fs.and_then(|r| r.layers).unwrap_or_default(),
            tags: image.repo_tags.unwrap_or_default(),
        })
    }

    /// The ID of a tagged image labelled with this build hash, if one exists (the build cache). Untagged
    /// images are ignored: labels are inherited, so the untagged intermediate images of builds on top of
    /// an image carry its build hash too (and a cleanup may remove them at any time), and an image
    /// untagged by a later rebuild is superseded.
    pub async fn find_image_by_build_hash(&self, build_hash: &str) -> Result<Option<String>> {
        let filters = HashMap::from([(
            "label",
            vec![format!("{}={build_hash}", labels::BUILD_HASH)],
        )]);
        let images = self
            .api()
            .list_images(Some(
                ListImagesOptionsBuilder::default()
                    .filters(&filters)
                    .build(),
            ))
            .await
            .map_err(|e| Error::docker("listing images", "image", build_hash, e))?;
        Ok(images
            .into_iter()
            .filter(|i| i.repo_tags.iter().any(|t| t != "<none>:<none>"))
            .max_by_key(|i| (i.created, i.id.clone()))
            .map(|i| i.id))
    }

    /// Makes sure `reference` is present and returns its ID: inspected if local, pulled (with progress lines
    /// sent to `progress`) if not — a Docker Hub image from `mirror` when there is one, tagged back under
    /// its own name. `paddock/…` references are local by definition and never pulled.
    pub async fn ensure_image(
        &self,
        reference: &str,
        mirror: Option<&Mirror>,
        progress: &mut (dyn FnMut(&str) + Send),
    ) -> Result<String> {
        match self.image_info(reference).await {
            Ok(info) => Ok(info.id),
            Err(Error::NotFound { .. }) if reference.starts_with("paddock/") => {
                Err(Error::NotFound {
                    kind: "image",
                    name: format!(
                        "{reference} (a local Paddock image: build it first, it cannot be pulled)"
                    ),
                })
            }
            Err(Error::NotFound { .. }) if reference.starts_with("sha256:") => {
                Err(Error::NotFound {
                    kind: "image",
                    name: reference.to_string(),
                })
            }
            Err(Error::NotFound { .. }) => match mirror.and_then(|m| m.rewrite(reference)) {
                Some(mirrored) => {
                    progress(&format!(
                        "pulling {reference} from the mirror, as {mirrored}"
                    ));
                    let id = self.pull_image(&mirrored, progress).await?;
                    self.tag_image(&mirrored, reference).await?;
                    Ok(id)
                }
                None => self.pull_image(reference, progress).await,
            },
            Err(e) => Err(e),
        }
    }

    /// Pulls a remote image, sending one line per progress message ("layer 1a2b: Downloading 12.0/40.1 MB").
    pub async fn pull_image(
        &self,
        reference: &str,
        progress: &mut (dyn FnMut(&str) + Send),
    ) -> Result<String> {
        let (name, tag) = split_tag(reference);
        let mut options = CreateImageOptionsBuilder::default().from_image(name);
        if let Some(tag) = tag {
            options = options.tag(tag);
        }
        let mut stream = self.api().create_image(Some(options.build()), None, None);
        let fail = |message: String| Error::PullFailed {
            image: reference.to_string(),
            message,
        };
        while let Some(item) = stream.next().await {
            match item {
                Ok(info) => {
                    let mut line = String::new();
                    if let Some(id) = &info.id {
                        line.push_str(&format!("layer {id}: "));
                    }
                    line.push_str(info.status.as_deref().unwrap_or(""));
                    if let Some(detail) = &info.progress_detail {
                        if let (Some(cur), Some(total)) = (detail.current, detail.total) {
                            line.push_str(&format!(
                                " {:.1}/{:.1} MB",
                                cur as f64 / 1e6,
                                total as f64 / 1e6
                            ));
                        }
                    }
                    if !line.trim().is_empty() {
                        progress(&line);
                    }
                }
                Err(bollard::errors::Error::DockerStreamError { error }) => {
                    return Err(fail(error))
                }
                Err(bollard::errors::Error::DockerResponseServerError { message, .. }) => {
                    return Err(fail(message))
                }
                Err(e) => {
                    return Err(
                        match Error::docker(format!("pulling {reference}"), "image", reference, e) {
                            Error::Docker { source, .. } => fail(source.to_string()),
                            other => other,
                        },
                    )
                }
            }
        }
        Ok(self.image_info(reference).await?.id)
    }

    /// Removes an image (tag or ID). `force` also removes it when other tags or stopped containers use it.
    /// A missing image is not an error: removal is idempotent.
    pub async fn remove_image(&self, reference: &str, force: bool) -> Result<()> {
        let options = RemoveImageOptionsBuilder::default()
            .force(force)
            .noprune(false)
            .build();
        match self
            .api()
            .remove_image(reference, Some(options), None)
            .await
        {
            Ok(_) => Ok(()),
            Err(e) => {
                match Error::docker(format!("removing image {reference}"), "image", reference, e) {
                    Error::NotFound { .. } => Ok(()),
                    other => Err(other),
                }
            }
        }
    }

    /// Adds a tag (`repo:tag`) to an image.
    pub async fn tag_image(&self, image: &str, target: &str) -> Result<()> {
        let (repo, tag) = split_tag(target);
        let options = bollard::query_parameters::TagImageOptionsBuilder::default()
            .repo(repo)
            .tag(tag.unwrap_or("latest"))
            .build();
        self.api()
            .tag_image(image, Some(options))
            .await
            .map_err(|e| Error::docker(format!("tagging {image} as {target}"), "image", image, e))
    }
}

/// Splits `name[:tag][@digest]` into name and tag-or-digest (a ':' before the last '/' is a port).
pub fn split_tag(reference: &str) -> (&str, Option<&str>) {
    if let Some((name, digest)) = reference.split_once('@') {
        return (name, Some(digest));
    }
    let slash = reference.rfind('/').map_or(0, |i| i + 1);
    match reference[slash..].rfind(':') {
        Some(i) => (&reference[..slash + i], Some(&reference[slash + i + 1..])),
        None => (reference, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_tags_not_ports() {
        assert_eq!(split_tag("debian:bookworm"), ("debian", Some("bookworm")));
        assert_eq!(split_tag("localhost:5000/x"), ("localhost:5000/x", None));
        assert_eq!(
            split_tag("localhost:5000/x:1"),
            ("localhost:5000/x", Some("1"))
        );
        assert_eq!(split_tag("a@sha256:00"), ("a", Some("sha256:00")));
    }
}
