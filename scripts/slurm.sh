#!/usr/bin/env bash
# A real two-node Slurm cluster on this machine, for the Slurm executor's tests (issue 16): Debian's Slurm
# 22.05 (`slurm-wlm`) and munge, one slurmctld and two slurmd (`node1`, `node2`) on 127.0.0.1, each node
# with 2 CPUs, 4000 MB and two "GPUs" as GRES (stand-in device files: Slurm only needs a file per
# device to hand out, and sets CUDA_VISIBLE_DEVICES from them as it would on a GPU node). Two
# partitions: `gpu` (both nodes, the default) and `short` (node2 only, one hour at most).
#
# Everything lives under one folder (default target/slurm; SLURM_DIR to change it), and the cluster is
# found through SLURM_CONF=<folder>/slurm.conf, so /etc/slurm stays as the machine had it. Idempotent:
# a cluster that answers is left running.
#
#   scripts/slurm.sh          install if needed, start, wait until both nodes are idle; prints the
#                             SLURM_CONF line to export
#   scripts/slurm.sh stop     stop the daemons this script started (munged is left to the machine)
#   scripts/slurm.sh env      print `export SLURM_CONF=…` (for `eval "$(scripts/slurm.sh env)"`)
#
# It also starts a "login node": Debian's sshd on 127.0.0.1:$SLURM_SSH_PORT (default 2222) with its own
# host key, accepting only the key in <folder>/ssh/id_ed25519 for root, and SLURM_CONF set for its
# sessions, so the executor's SSH path is tested against a real sshd with the host key checked
# (<folder>/ssh/known_hosts).
#
# Accounting is on, as on a real cluster that charges teams: slurmdbd on 127.0.0.1:16819 over a MariaDB
# of its own (<folder>/mysql, 127.0.0.1:16306), with AccountingStorageEnforce=associations,qos, so a job
# whose account or QoS the cluster does not know is refused at submission. Accounts: `paddock` (root's
# default) and `team-a`, `team-b`; QoS: `normal` (Slurm's default) and `high`, both allowed to root.
#
# Facts this relies on (Debian 12, as root): Debian's build lets several slurmd run on one host
# (`slurmd -N node1`); `Gres=gpu:N` without `File=` leaves nodes INVALID, hence the stand-in files;
# slurmrestd refuses to run as root, so the executor uses the command-line tools; slurmdbd reads
# slurmdbd.conf beside SLURM_CONF (0600, owned by SlurmUser). A finished job is known to `scontrol show
# job` for MinJobAge seconds, which is all Paddock asks of it (then its run folder says how it ended). A
# node an admin sets DOWN stays down, with the admin's reason, until resumed (ReturnToService=1, Slurm's
# default), as on a real cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf '\033[1m[slurm]\033[0m %s\n' "$*"; }

dir=$(realpath -m "${SLURM_DIR:-target/slurm}")
conf=$dir/slurm.conf
export SLURM_CONF=$conf
nodes=(node1 node2)

case "${1:-start}" in
  env) echo "export SLURM_CONF=$conf"; exit 0 ;;
  stop)
    for pidfile in "$dir"/slurmd-*.pid "$dir"/slurmctld.pid "$dir"/ssh/sshd.pid "$dir"/slurmdbd.pid "$dir"/mysql/mariadb.pid; do
      [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
    done
    say "stopped"; exit 0 ;;
  start) ;;
  *) echo "usage: $0 [start|stop|env]" >&2; exit 2 ;;
esac

if [ "$(id -u)" -ne 0 ]; then
  say "needs root (munged and slurmd run as root or munge here)"; exit 1
fi

missing=()
for p in slurm-wlm slurmdbd mariadb-server munge openssh-server; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# munge: the key the package made, a socket folder owned by its user, the daemon as that user.
if ! munge -n </dev/null >/dev/null 2>&1; then
  [ -f /etc/munge/munge.key ] || { say "creating the munge key"; mungekey --create --keyfile=/etc/munge/munge.key; }
  chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
  install -d -o munge -g munge -m 0755 /run/munge
  install -d -o munge -g munge -m 0700 /var/lib/munge /var/log/munge
  say "starting munged"
  runuser -u munge -- /usr/sbin/munged
  for _ in $(seq 1 20); do munge -n </dev/null >/dev/null 2>&1 && break; sleep 0.25; done
fi

ssh_port=${SLURM_SSH_PORT:-2222}
ssh_dir=$dir/ssh
# The login node: an sshd of its own (not the machine's), key-only, for root, with SLURM_CONF set.
login_node() {
  mkdir -p "$ssh_dir" && chmod 700 "$ssh_dir"
  [ -f "$ssh_dir/host_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C paddock-test-host -f "$ssh_dir/host_ed25519"
  [ -f "$ssh_dir/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C paddock-test-client -f "$ssh_dir/id_ed25519"
  cp "$ssh_dir/id_ed25519.pub" "$ssh_dir/authorized_keys" && chmod 600 "$ssh_dir/authorized_keys"
  echo "[127.0.0.1]:$ssh_port $(cut -d' ' -f1-2 "$ssh_dir/host_ed25519.pub")" >"$ssh_dir/known_hosts"
  cat >"$ssh_dir/sshd_config" <<EOF
Port $ssh_port
ListenAddress 127.0.0.1
HostKey $ssh_dir/host_ed25519
PidFile $ssh_dir/sshd.pid
AuthorizedKeysFile $ssh_dir/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
SetEnv SLURM_CONF=$conf
EOF
  if [ -f "$ssh_dir/sshd.pid" ] && kill -0 "$(cat "$ssh_dir/sshd.pid")" 2>/dev/null; then
    kill -HUP "$(cat "$ssh_dir/sshd.pid")"   # re-reads its configuration
  else
    mkdir -p /run/sshd && /usr/sbin/sshd -f "$ssh_dir/sshd_config" -E "$ssh_dir/sshd.log"
  fi
  for _ in $(seq 1 20); do
    ssh -q -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$ssh_dir/known_hosts" \
      -i "$ssh_dir/id_ed25519" -p "$ssh_port" root@127.0.0.1 true && { say "login node: root@127.0.0.1:$ssh_port"; return; }
    sleep 0.25
  done
  say "the login node's sshd does not answer; see $ssh_dir/sshd.log"; return 1
}

# Accounting: MariaDB with a folder, port and socket of its own (not the machine's), then slurmdbd over it,
# then the cluster's accounts and root's associations (each added once).
db=$dir/mysql
sql() { mariadb --socket="$db/mysqld.sock" -uroot -e "$1"; }
accounting_db() {
  if ! sql 'SELECT 1' >/dev/null 2>&1; then
    if [ ! -d "$db/data/mysql" ]; then
      mkdir -p "$db"
      mariadb-install-db --user=root --datadir="$db/data" --auth-root-authentication-method=socket --skip-test-db >"$db/install.log" 2>&1
    fi
    say "starting MariaDB for slurmdbd (127.0.0.1:16306)"
    (setsid /usr/sbin/mariadbd --user=root --datadir="$db/data" --socket="$db/mysqld.sock" --port=16306 \
      --bind-address=127.0.0.1 --skip-name-resolve --pid-file="$db/mariadb.pid" --log-error="$db/mariadb.log" \
      --innodb-lock-wait-timeout=900 </dev/null >/dev/null 2>&1 &)
    for _ in $(seq 1 80); do sql 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.25; done
  fi
  sql "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
  cat >"$dir/slurmdbd.conf" <<EOF
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=16819
SlurmUser=root
PidFile=$dir/slurmdbd.pid
LogFile=$dir/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=16306
StorageUser=slurm
StoragePass=slurm
StorageLoc=slurm_acct_db
EOF
  chmod 600 "$dir/slurmdbd.conf"
  if ! { [ -f "$dir/slurmdbd.pid" ] && kill -0 "$(cat "$dir/slurmdbd.pid")" 2>/dev/null; }; then
    say "starting slurmdbd (127.0.0.1:16819)"
    /usr/sbin/slurmdbd
  fi
  for _ in $(seq 1 80); do sacctmgr -nP show cluster >/dev/null 2>&1 && return; sleep 0.25; done
  say "slurmdbd does not answer; see $dir/slurmdbd.log"; return 1
}
accounts() {
  sacctmgr -nP show cluster format=cluster | grep -qx paddock || sacctmgr -i add cluster paddock >/dev/null
  sacctmgr -nP show qos format=name | grep -qx high || sacctmgr -i add qos high >/dev/null
  for a in paddock team-a team-b; do
    sacctmgr -nP show account "$a" format=account | grep -qx "$a" || sacctmgr -i add account "$a" Description="$a" Organization=paddock >/dev/null
  done
  if ! sacctmgr -nP show assoc where user=root account=team-b format=account | grep -qx team-b; then
    sacctmgr -i add user root account=paddock,team-a,team-b DefaultAccount=paddock >/dev/null
    sacctmgr -i modify user root set qos=normal,high defaultqos=normal >/dev/null
  fi
}

mkdir -p "$dir/state" "$dir/spool"
for n in "${nodes[@]}"; do mkdir -p "$dir/spool/$n"; done
# The configuration is written beside the running one and replaces it (with a restart) only when it
# changed, so an edit to this script reaches a cluster that is already up.
cat >"$conf.new" <<EOF
# Written by scripts/slurm.sh: a two-node test cluster on 127.0.0.1.
ClusterName=paddock
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=16817
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
GresTypes=gpu
MpiDefault=none
ReturnToService=1
MinJobAge=600
KillWait=10
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=16819
AccountingStorageEnforce=associations,qos
JobAcctGatherType=jobacct_gather/none
NodeName=node[1-2] NodeHostname=localhost NodeAddr=127.0.0.1 Port=17001-17002 CPUs=2 RealMemory=4000 Gres=gpu:2 State=UNKNOWN
PartitionName=gpu Nodes=node[1-2] Default=YES MaxTime=INFINITE State=UP
PartitionName=short Nodes=node2 MaxTime=60 State=UP
EOF
# Stand-in GPU devices: two per node. Any existing file works; Slurm only counts and hands them out.
cat >"$dir/gres.conf" <<EOF
NodeName=node[1-2] Name=gpu File=/dev/tty[1-2]
EOF
# The controller loads the associations from slurmdbd after it starts: until then it refuses work charged
# to an account. A cluster is reported up only once it would take root's work charged to team-a.
takes_accounts() {
  local answer
  for _ in $(seq 1 60); do
    answer=$(sbatch --test-only -A team-a --qos=normal --wrap=true 2>&1) && return 0
    sleep 0.5
  done
  say "the controller does not take work charged to team-a: $answer"
  return 1
}
# A node is listed once per partition it is in: counted once.
running() { scontrol ping >/dev/null 2>&1 && [ "$(sinfo -h -N -o '%N %T' 2>/dev/null | sort -u | grep -c ' idle\| mixed\| alloc')" -eq ${#nodes[@]} ]; }
if cmp -s "$conf.new" "$conf" && running; then
  rm -f "$conf.new"; accounting_db; accounts; takes_accounts; say "cluster running ($conf)"; login_node; echo "export SLURM_CONF=$conf"; exit 0
fi
for pidfile in "$dir"/slurmd-*.pid "$dir"/slurmctld.pid; do
  [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
done
for _ in $(seq 1 40); do pgrep -x slurmctld >/dev/null || pgrep -x slurmd >/dev/null || break; sleep 0.25; done
mv "$conf.new" "$conf"
accounting_db
accounts

say "starting slurmctld and ${nodes[*]} (logs in $dir)"
# A fresh controller state (-c): a restarted test cluster starts with no jobs.
/usr/sbin/slurmctld -c -i
for _ in $(seq 1 40); do scontrol ping >/dev/null 2>&1 && break; sleep 0.25; done
for n in "${nodes[@]}"; do /usr/sbin/slurmd -N "$n"; done
for _ in $(seq 1 80); do
  states=$(sinfo -h -N -o '%N %T' 2>/dev/null | sort -u || true)
  if [ "$(grep -c ' idle' <<<"$states")" -eq ${#nodes[@]} ]; then
    takes_accounts
    say "cluster up: $(tr '\n' ' ' <<<"$states")"; login_node; echo "export SLURM_CONF=$conf"; exit 0
  fi
  sleep 0.25
done
say "nodes did not become idle: $(sinfo -N 2>&1 | tr '\n' ' '); see $dir/*.log"
tail -3 "$dir/slurmctld.log" >&2
exit 1
