#!/usr/bin/env bash
# A throwaway PostgreSQL for the team server's tests and for trying it:
# Debian's `postgresql` package (scripts/test.sh installs it when missing),
# a new cluster in DIR, nothing downloaded, no container.
#
#   scripts/postgres.sh start DIR            listen on a Unix socket in DIR only
#   scripts/postgres.sh start DIR --tcp PORT --password PW [--tls] [--listen ADDR]
#                                            also 127.0.0.1:PORT, where a
#                                            password (scram-sha-256) is asked;
#                                            --tls: TLS with a
#                                            certificate for localhost and
#                                            127.0.0.1 signed by a CA of its
#                                            own (DIR/ca.crt; openssl);
#                                            --listen: also ADDR:PORT (an
#                                            IPv4 address of this host's, in
#                                            the certificate too), for
#                                            clients on other hosts, which
#                                            the URL then names
#   scripts/postgres.sh stop DIR             stop it (DIR stays; delete it)
#   scripts/postgres.sh start DIR            again: start the stopped cluster
#
# `start` prints the database URL on stdout, e.g.
# postgresql:///vouch?host=/tmp/x&user=vouch (the socket's folder), or
# postgresql://vouch:PW@127.0.0.1:PORT/vouch with --tcp. The cluster runs
# with fsync off: it is for tests, whose crashes are vouch's, not the
# database's. As root, the server runs as Debian's `postgres` user (initdb
# refuses root), which is given DIR.
set -euo pipefail

die() { echo "scripts/postgres.sh: $*" >&2; exit 1; }

bindir() {
    local d
    if command -v pg_config >/dev/null && [ -x "$(pg_config --bindir)/initdb" ]; then
        pg_config --bindir
        return
    fi
    # Debian keeps the server's programs out of PATH, one folder per version.
    d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    [ -n "$d" ] && [ -x "$d/initdb" ] || die "no PostgreSQL server found: apt-get install postgresql"
    echo "$d"
}

# as_owner CMD...: run as the cluster's owner (postgres when we are root).
as_owner() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: $0 start|stop DIR [--tcp PORT --password PW]"
shift 2
bin=$(bindir)

case "$cmd" in
start)
    port="" password="" tls="" addr=""
    while [ $# -gt 0 ]; do
        case "$1" in
        --tcp) port=${2:?--tcp PORT}; shift 2 ;;
        --password) password=${2:?--password PW}; shift 2 ;;
        --tls) tls=1; shift ;;
        --listen) addr=${2:?--listen ADDR}; shift 2 ;;
        *) die "unknown option $1" ;;
        esac
    done
    [ -z "$port" ] || [ -n "$password" ] || die "--tcp needs --password"
    [ -z "$tls" ] || [ -n "$port" ] || die "--tls needs --tcp"
    [ -z "$addr" ] || [ -n "$port" ] || die "--listen needs --tcp"
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    if [ -e "$dir/data" ]; then
        # Started before (and stopped): start it again, same URL.
        [ -f "$dir/url" ] || die "$dir/data exists but $dir/url does not: not one of ours"
        as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null \
            || { cat "$dir/server.log" >&2; die "the server did not start"; }
        cat "$dir/url"
        exit 0
    fi
    if [ "$(id -u)" = 0 ]; then
        chown postgres "$dir"
        chmod 0755 "$dir"
    fi
    pwfile=""
    if [ -n "$password" ]; then
        pwfile="$dir/.pw"
        printf '%s\n' "$password" >"$pwfile"
        chmod 0600 "$pwfile"
        [ "$(id -u)" != 0 ] || chown postgres "$pwfile"
    fi
    as_owner "$bin/initdb" -D "$dir/data" -U vouch -E UTF8 --locale=C --no-sync \
        --auth-local=trust --auth-host=scram-sha-256 ${pwfile:+--pwfile="$pwfile"} >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
    rm -f "$pwfile"
    listen="''"
    [ -z "$port" ] || listen="'127.0.0.1${addr:+,$addr}'"
    # The settings go in the cluster's own config, so a restart keeps them.
    {
        echo "unix_socket_directories = '$dir'"
        echo "listen_addresses = $listen"
        [ -z "$port" ] || echo "port = $port"
        echo "fsync = off"
        echo "max_connections = 200"
        if [ -n "$tls" ]; then
            echo "ssl = on"
            echo "ssl_cert_file = '$dir/server.crt'"
            echo "ssl_key_file = '$dir/server.key'"
        fi
    } >>"$dir/data/postgresql.conf"
    if [ -n "$tls" ]; then
        # A CA of its own, and the server's certificate signed by it (a
        # self-signed server certificate is a CA's, which TLS clients
        # rightly refuse as a server's).
        {
            openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=vouch test CA" \
                -keyout "$dir/ca.key" -out "$dir/ca.crt" &&
            openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
                -keyout "$dir/server.key" -out "$dir/server.csr" &&
            printf 'subjectAltName=DNS:localhost,IP:127.0.0.1%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' \
                "${addr:+,IP:$addr}" >"$dir/server.ext" &&
            openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
                -CAcreateserial -days 2 -extfile "$dir/server.ext" -out "$dir/server.crt"
        } >/dev/null 2>&1 || die "openssl could not make the certificates"
        rm -f "$dir/ca.key" "$dir/server.csr" "$dir/server.ext"
        chmod 0600 "$dir/server.key"
        [ "$(id -u)" != 0 ] || chown postgres "$dir/server.key" "$dir/server.crt"
    fi
    if [ -n "$addr" ]; then
        # Other hosts, with a password (over TLS only, when it is on).
        hba=host
        [ -z "$tls" ] || hba=hostssl
        echo "$hba all all 0.0.0.0/0 scram-sha-256" >>"$dir/data/pg_hba.conf"
    fi
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null \
        || { cat "$dir/server.log" >&2; die "the server did not start"; }
    sock_port=${port:-5432}
    as_owner "$bin/createdb" -h "$dir" -p "$sock_port" -U vouch vouch
    if [ -n "$port" ]; then
        url="postgresql://vouch:$password@${addr:-127.0.0.1}:$port/vouch"
        [ -z "$tls" ] || url="$url?sslmode=require&sslrootcert=$dir/ca.crt"
    else
        url="postgresql:///vouch?host=$dir&user=vouch"
    fi
    (umask 077 && echo "$url" >"$dir/url")
    echo "$url"
    ;;
stop)
    dir=$(cd "$dir" && pwd)
    [ -d "$dir/data" ] || die "no cluster in $dir"
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    ;;
*)
    die "unknown command $cmd (start or stop)"
    ;;
esac
