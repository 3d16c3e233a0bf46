-- Where Docker Hub base images are pulled from instead of Docker Hub (`host[:port][/path]`, see
-- containers::mirror); NULL: from Docker Hub itself.
ALTER TABLE instance_settings ADD COLUMN registry_mirror TEXT;
