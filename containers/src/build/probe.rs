//! Looking inside a base image without running it: a container is created (never started) from the image,
//! files are read or stat'ed through the archive API, and the container is removed. This works on any base,
//! including ones without a shell, and is how the build learns the base's users and whether it has a glibc
//! dynamic loader.

use std::collections::HashMap;
use std::io::Read;

use bollard::models::ContainerCreateBody;
use bollard::query_parameters::{
    ContainerArchiveInfoOptionsBuilder, DownloadFromContainerOptionsBuilder,
    RemoveContainerOptionsBuilder,
};
use futures_util::TryStreamExt;

use crate::error::{Error, Result};
use crate::labels;
use crate::Docker;

/// Label on probe containers, so that one left behind by a crash is recognisable.
pub const PROBE_LABEL: &str = "paddock.probe";

/// A created-but-never-started container over an image. Call [`Probe::remove`] when done; on an early
/// return the container stays, labelled [`PROBE_LABEL`] (and with the instance label) for cleanup.
pub struct Probe<'a> {
    docker: &'a Docker,
    id: String,
}

impl<'a> Probe<'a> {
    pub async fn create(
        docker: &'a Docker,
        image: &str,
        instance: Option<&str>,
    ) -> Result<Probe<'a>> {
        let mut container_labels = HashMap::from([(PROBE_LABEL.to_string(), "true".to_string())]);
        if let Some(instance) = instance {
            container_labels.insert(labels::INSTANCE.to_string(), instance.to_string());
        }
        let body = ContainerCreateBody {
            image: Some(image.to_string()),
            // Never run; create only needs some command when the image has none (scratch bases).
            cmd: Some(vec!["/paddock-probe-never-started".to_string()]),
            labels: Some(container_labels),
            network_disabled: Some(true),
            ..Default::default()
        };
        let created = docker
            .api()
            .create_container(
                None::<bollard::query_parameters::CreateContainerOptions>,
                body,
            )
            .await
            .map_err(|e| {
                Error::docker(
                    format!("creating a probe container for {image}"),
                    "image",
                    image,
                    e,
                )
            })?;
        Ok(Probe {
            docker,
            id: created.id,
        })
    }

    /// The contents of a regular file, or None when the path does not exist.
    pub async fn read_file(&self, path: &str) -> Result<Option<String>> {
        let options = DownloadFromContainerOptionsBuilder::default()
            .path(path)
            .build();
        let chunks: Vec<bytes::Bytes> = match self
            .docker
            .api()
            .download_from_container(&self.id, Some(options))
            .try_collect()
            .await
        {
            Ok(chunks) => chunks,
            Err(e) => {
                return match Error::docker(
                    format!("reading {path} from a base image"),
                    "file",
                    path,
                    e,
                ) {
                    Error::NotFound { .. } => Ok(None),
                    other => Err(other),
                }
            }
        };
        let tar_bytes = chunks.concat();
        let mut archive = tar::Archive::new(&tar_bytes[..]);
        let context = format!("reading {path} from a base image");
        let mut entries = archive.entries().map_err(|e| Error::host(&context, e))?;
        let Some(entry) = entries.next() else {
            return Ok(None);
        };
        let mut entry = entry.map_err(|e| Error::host(&context, e))?;
        if entry.header().entry_type() != tar::EntryType::Regular {
            return Ok(None);
        }
        let mut text = String::new();
        entry
            .read_to_string(&mut text)
            .map_err(|e| Error::host(&context, e))?;
        Ok(Some(text))
    }

    /// Whether a path exists in the image (symlinks count).
    pub async fn exists(&self, path: &str) -> Result<bool> {
        let options = ContainerArchiveInfoOptionsBuilder::default()
            .path(path)
            .build();
        match self
            .docker
            .api()
            .get_container_archive_info(&self.id, Some(options))
            .await
        {
            Ok(_) => Ok(true),
            Err(e) => match Error::docker(
                format!("looking for {path} in a base image"),
                "file",
                path,
                e,
            ) {
                Error::NotFound { .. } => Ok(false),
                other => Err(other),
            },
        }
    }

    pub async fn remove(self) -> Result<()> {
        let options = RemoveContainerOptionsBuilder::default()
            .force(true)
            .v(true)
            .build();
        match self
            .docker
            .api()
            .remove_container(&self.id, Some(options))
            .await
        {
            Ok(()) => Ok(()),
            Err(e) => match Error::docker("removing a probe container", "container", &self.id, e) {
                Error::NotFound { .. } => Ok(()),
                other => Err(other),
            },
        }
    }
}
