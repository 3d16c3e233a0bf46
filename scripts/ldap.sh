#!/usr/bin/env bash
# The LDAP directory the company sign-in tests run against: Debian's OpenLDAP `slapd` (2.5), on
# loopback high ports, with a throwaway database, its own CA and a server certificate signed by it.
#   ldap://127.0.0.1:13389   plain, and StartTLS
#   ldaps://127.0.0.1:13636  TLS from the first byte
# Suffix dc=paddock,dc=test; the directory's manager cn=admin,dc=paddock,dc=test (password `manager`)
# is what the tests use to add and remove their own people and groups (each test its own names); the
# service account Paddock binds as is cn=paddock,ou=services,dc=paddock,dc=test (password `service`),
# which may read, not write. The memberof overlay keeps `memberOf` on people and on groups that are
# members of groups, as Active Directory does, so both group styles are tested on this one server.
#
# Everything lives under one folder (default target/ldap; LDAP_DIR to change it), the CA at ca.pem.
# Idempotent: a running slapd is left alone.
#   scripts/ldap.sh        install if needed, start, wait until it answers
#   scripts/ldap.sh stop   stop the slapd this script started
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\033[1m[ldap]\033[0m %s\n' "$*"; }

dir=$(realpath -m "${LDAP_DIR:-target/ldap}")
pidfile=$dir/slapd.pid
suffix=dc=paddock,dc=test
manager="cn=admin,$suffix"
url=ldap://127.0.0.1:13389

case "${1:-start}" in
  stop)
    [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
    say "stopped"; exit 0 ;;
  start) ;;
  *) echo "usage: $0 [start|stop]" >&2; exit 2 ;;
esac

missing=()
for p in slapd ldap-utils openssl; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  say "apt: installing ${missing[*]}"
  $SUDO apt-get update -qq
  # slapd's own service is not wanted (policy-rc.d may refuse to start it anyway): only the binary.
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
  say "slapd already running ($url)"; exit 0
fi

mkdir -p "$dir/db"
# The CA and the server's certificate (for 127.0.0.1 and localhost), once.
if [ ! -f "$dir/server.pem" ]; then
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=Paddock test LDAP CA" \
    -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout "$dir/server.key" -out "$dir/server.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$dir/san.ext"
  openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
    -days 3650 -extfile "$dir/san.ext" -out "$dir/server.pem" 2>/dev/null
fi
# slapd may drop to the openldap user on a real install; here it runs as whoever starts it, so the key
# only needs to be readable by that user.
chmod 600 "$dir/server.key"

cat >"$dir/slapd.conf" <<EOF
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include /etc/ldap/schema/nis.schema
modulepath /usr/lib/ldap
moduleload back_mdb
moduleload memberof
pidfile $pidfile
argsfile $dir/slapd.args
TLSCACertificateFile $dir/ca.pem
TLSCertificateFile $dir/server.pem
TLSCertificateKeyFile $dir/server.key

database mdb
suffix "$suffix"
rootdn "$manager"
rootpw manager
directory $dir/db
maxsize 104857600
overlay memberof
memberof-group-oc groupOfNames
memberof-member-ad member
memberof-memberof-ad memberOf
memberof-refint true
# The service account reads; people bind as themselves; nobody anonymous reads anything.
access to attrs=userPassword
  by anonymous auth
  by * none
access to *
  by dn.exact="cn=paddock,ou=services,$suffix" read
  by self read
  by * none
EOF

say "starting slapd ($url, ldaps://127.0.0.1:13636)"
slapd -f "$dir/slapd.conf" -h "ldap://127.0.0.1:13389/ ldaps://127.0.0.1:13636/"

for _ in $(seq 1 50); do
  ldapsearch -x -H "$url" -D "$manager" -w manager -b "" -s base >/dev/null 2>&1 && break
  sleep 0.2
done

# The tree and the service account, once (a restarted slapd keeps its database).
if ! ldapsearch -x -H "$url" -D "$manager" -w manager -b "$suffix" -s base >/dev/null 2>&1; then
  ldapadd -x -H "$url" -D "$manager" -w manager >/dev/null <<EOF
dn: $suffix
objectClass: dcObject
objectClass: organization
o: Paddock test
dc: paddock

dn: ou=people,$suffix
objectClass: organizationalUnit
ou: people

dn: ou=groups,$suffix
objectClass: organizationalUnit
ou: groups

dn: ou=services,$suffix
objectClass: organizationalUnit
ou: services

dn: cn=paddock,ou=services,$suffix
objectClass: organizationalRole
objectClass: simpleSecurityObject
cn: paddock
userPassword: service
EOF
fi
# The service account binds over StartTLS with the CA: what Paddock will do.
LDAPTLS_CACERT="$dir/ca.pem" ldapwhoami -x -H "$url" -ZZ -D "cn=paddock,ou=services,$suffix" -w service >/dev/null
say "ready: $url (StartTLS), ldaps://127.0.0.1:13636, CA $dir/ca.pem"
