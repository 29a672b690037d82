#!/bin/sh
# Run once by the postgres image when its data volume is new (mounted in
# /docker-entrypoint-initdb.d by compose.yaml): Tilth's own role, which owns Tilth's database and
# nothing else. It is not a superuser, so Tilth (or anyone holding its password) cannot read or
# change other databases, roles or the server's files.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres -v password="$POSTGRES_TILTH_PASSWORD" <<'SQL'
CREATE ROLE tilth LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION PASSWORD :'password';
CREATE DATABASE tilth OWNER tilth;
REVOKE ALL ON DATABASE tilth FROM PUBLIC;
SQL
