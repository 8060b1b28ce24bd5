# stacks/wordpress/stack.sh: Debian's WordPress, an application nobody here
# wrote: Apache httpd (mpm_event, mod_proxy_fcgi) -> php-fpm 8.2 (a master of
# our own, pm = static) -> MariaDB. Everything from Debian's packages, run
# with the testbed's own configuration (never the system's /etc/apache2 or
# /etc/php), on loopback.
#
# Pools (testbed.sh apply WEB_THREADS CHILDREN [MAX_CONNECTIONS]), each
# through its example hook (examples/hooks): Apache's MaxRequestWorkers and
# ProxySet max= (apache.sh: a graceful restart), php-fpm's pm.max_children
# (phpfpm.sh: a reload, USR2: the children and OPcache start afresh),
# MariaDB's max_connections (mariadb.sh: SET GLOBAL). A php-fpm child opens its own
# connection for each page (WordPress's wpdb, not persistent):
# MAX_CONNECTIONS defaults to 2 x CHILDREN + 10, and never below MariaDB's
# default 151 unless given.
#
# Settings (read by `up`):
#   SOFTALLOC_TESTBED_PHP_MEMORY    the php-fpm tier's memory limit, MiB (default 512)
#   SOFTALLOC_TESTBED_WP_POSTS      posts to seed (default 3000; the cached dump
#                                   is per count)
#
# WordPress's files stay in /usr/share/wordpress, read-only. Debian's
# wp-config.php reads /etc/wordpress/config-$WORDPRESS_CONFIG.php when the
# server variable WORDPRESS_CONFIG is set (Apache's SetEnv): `up` writes
# config-softalloc-testbed-PORT.php there, named for the testbed's port, and
# `down` removes it. Nothing else outside the state directory is written.

WP_DIR=/usr/share/wordpress
WP_STACK=$REPO/testbed/stacks/wordpress
# php-fpm's status listener (FastCGI, an invisible pool of its own that
# answers when every child is busy) and the monitor's Apache that turns it
# into HTTP for Prometheus.
FPM_STATUS_PORT=$((18083 + PORT_OFFSET))
FPM_METRICS_PORT=$((18084 + PORT_OFFSET))
WP_CONFIG_NAME=softalloc-testbed-$WEB_PORT
WP_ETC=/etc/wordpress/config-$WP_CONFIG_NAME.php
WP_POSTS=${SOFTALLOC_TESTBED_WP_POSTS:-3000}
PHP_MEMORY=${SOFTALLOC_TESTBED_PHP_MEMORY:-512}

# The caps leave 0.2 of the 2 cores to the load generator and Prometheus
# (uncapped): at app=1 the tiers' caps took the whole machine, and in a CI
# run php-fpm, throttled in 0.90 of its periods, used only 0.94 of its
# quota at its plateau, short of find-critical's 0.95.
STACK_CAPS="web=0.5 app=0.8 db=0.5"
STACK_MEM_GROUPS="app"
# MariaDB's user statistics: the mysql-userstat preset's statement rate and
# time, the wordpress user's alone.
STACK_MYSQLD_EXPORTER_FLAGS="--collect.info_schema.userstats"
STACK_NEED="php-fpm8.2 php8.2"
STACK_APT="wordpress wordpress-theme-twentytwentythree php8.2-fpm php8.2-mysql php8.2-cli"
STACK_PORTS="$FPM_STATUS_PORT $FPM_METRICS_PORT"
STACK_PROCS="db app web fpm-metrics"
STACK_HEALTH=/
STACK_FRONT=/
# Apache's threads, php-fpm's children (Debian's www.conf: 5), MariaDB's
# max_connections (its default).
DEFAULT_POOLS="100 5 151"

# Only the php binaries' directory: php-fpm8.2 is in /usr/sbin.
PATH=$PATH:/usr/sbin

stack_build() {
  [ -f "$WP_DIR/wp-load.php" ] || die "no WordPress in $WP_DIR (Debian: apt-get install wordpress)"
  [ -d "$WP_DIR/wp-content/themes/twentytwentythree" ] ||
    die "no theme: WordPress 6.1's default, twentytwentythree, is not installed (Debian: apt-get install wordpress-theme-twentytwentythree)"
  if [ -e "$WP_ETC" ] && ! grep -q 'softalloc testbed' "$WP_ETC"; then
    die "$WP_ETC exists and is not the testbed's: move it away or set SOFTALLOC_TESTBED_PORT_OFFSET"
  fi
  php_config
}

# php_config: php.ini (the extensions WordPress uses, OPcache), the php-fpm
# master's configuration and WordPress's config. PHP_INI_SCAN_DIR is empty
# where php runs, so that Debian's /etc/php/8.2/*/conf.d is not read.
php_config() {
  mkdir -p "$TB/php" "$TB/php/pool.d"
  local ext
  # The compiled-in extension directory (php8.2-dev's php-config says the same).
  ext=$(php8.2 -n -r 'echo ini_get("extension_dir");')
  cat >"$TB/php/php.ini" <<INI
; Written by testbed.sh up (wordpress stack).
extension=$ext/mysqlnd.so
extension=$ext/mysqli.so
extension=$ext/ctype.so
extension=$ext/iconv.so
extension=$ext/fileinfo.so
extension=$ext/exif.so
extension=$ext/gd.so
extension=$ext/tokenizer.so
extension=$ext/posix.so
zend_extension=$ext/opcache.so
memory_limit = 128M
max_execution_time = 60
display_errors = Off
log_errors = On
error_log = $LOGS/php-errors.log
expose_php = Off
opcache.enable = 1
opcache.enable_cli = 0
opcache.memory_consumption = 64
opcache.max_accelerated_files = 4000
opcache.validate_timestamps = 0
realpath_cache_size = 4096k
INI
  cat >"$TB/php/php-fpm.conf" <<CONF
; Written by testbed.sh up (wordpress stack).
[global]
pid = $RUN/php-fpm.pid
error_log = $LOGS/php-fpm.log
log_level = notice
daemonize = no
include = $TB/php/pool.d/*.conf
CONF
  cat >"$TB/php/wp-config.php" <<PHP
<?php
// The softalloc testbed's WordPress configuration (written by testbed.sh up;
// /etc/wordpress/config-$WP_CONFIG_NAME.php is this file, removed by down).
define('DB_NAME', 'wordpress');
define('DB_USER', 'wordpress');
define('DB_PASSWORD', 'wordpress');
define('DB_HOST', '127.0.0.1:$DB_PORT');
define('DB_CHARSET', 'utf8mb4');
define('DB_COLLATE', '');
// Fixed salts: a testbed, no secrets.
foreach (['AUTH', 'SECURE_AUTH', 'LOGGED_IN', 'NONCE'] as \$k) {
    define(\$k . '_KEY', 'softalloc-testbed-' . \$k);
    define(\$k . '_SALT', 'softalloc-testbed-salt-' . \$k);
}
\$table_prefix = 'wp_';
define('WP_HOME', 'http://127.0.0.1:$WEB_PORT');
define('WP_SITEURL', 'http://127.0.0.1:$WEB_PORT');
define('WP_CONTENT_DIR', '/var/lib/wordpress/wp-content');
// Scheduled jobs would run inside page requests, at random.
define('DISABLE_WP_CRON', true);
define('AUTOMATIC_UPDATER_DISABLED', true);
define('WP_HTTP_BLOCK_EXTERNAL', true);
define('WP_DEBUG', false);
PHP
}

# fpm_pool CHILDREN: the pool file php-fpm reads at start and at each
# reload; apply edits its pm.max_children through examples/hooks/phpfpm.sh.
fpm_pool() {
  local children=$1
  ((children >= 1 && children <= 4096)) || die "php-fpm children $children: want 1..4096"
  cat >"$TB/php/pool.d/www.conf.new" <<CONF
; Written by testbed.sh up; apply edits pm.max_children in place
; through examples/hooks/phpfpm.sh.
[www]
user = www-data
group = www-data
listen = 127.0.0.1:$APP_PORT
listen.backlog = 511
pm = static
pm.max_children = $children
; php-fpm's own status page: OpenMetrics with ?openmetrics. status_listen
; serves it from an invisible pool of its own, so it answers when every
; child of this one is busy.
pm.status_path = /status
pm.status_listen = 127.0.0.1:$FPM_STATUS_PORT
ping.path = /ping
request_terminate_timeout = 120s
catch_workers_output = yes
decorate_workers_output = no
CONF
  mv "$TB/php/pool.d/www.conf.new" "$TB/php/pool.d/www.conf"
}

fpm_check() {
  PHP_INI_SCAN_DIR= php-fpm8.2 -t -c "$TB/php/php.ini" -y "$TB/php/php-fpm.conf" >>"$LOGS/php-fpm-check.log" 2>&1
}

fpm_start() {
  fpm_pool "$1"
  fpm_check || die "php-fpm's configuration does not parse; see $LOGS/php-fpm-check.log"
  PHP_INI_SCAN_DIR= start app app php-fpm8.2 --nodaemonize -c "$TB/php/php.ini" -y "$TB/php/php-fpm.conf"
  wait_for php-fpm 30 fpm_up
}

# fpm_up: the master is alive and listens on both ports.
fpm_up() {
  if ! pid_alive app; then
    log "php-fpm exited while starting; the end of $LOGS/php-fpm.log:"
    tail -n 15 "$LOGS/php-fpm.log" | sed 's/^/    /' >&2
    exit 1
  fi
  ! port_free $APP_PORT && ! port_free $FPM_STATUS_PORT
}

# ---------------------------------------------------------------- database

# wp_load: WordPress's tables and content. A cached dump of an earlier seed
# (per post count and seed script) loads in seconds; otherwise seed.php
# builds it through WordPress's own API and the dump is kept.
wp_load() {
  local dump t0=$SECONDS
  dump=$TB/wordpress-seed-$(wp_stamp).sql.gz
  db_client <<'SQL'
CREATE DATABASE IF NOT EXISTS wordpress CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
CREATE USER IF NOT EXISTS 'wordpress'@'127.0.0.1' IDENTIFIED BY 'wordpress';
GRANT ALL ON wordpress.* TO 'wordpress'@'127.0.0.1';
SQL
  if [ -s "$dump" ]; then
    log "loading WordPress's content from $dump"
    gzip -dc "$dump" | db_client wordpress
    log "loaded in $((SECONDS - t0)) s"
    return 0
  fi
  log "seeding WordPress through its own API: $WP_POSTS posts with comments, categories, tags, authors (minutes; kept in $dump)"
  # The database runs uncapped while it is filled; up puts the caps back.
  set_cap db max
  (cd "$WP_STACK" && PHP_INI_SCAN_DIR= WORDPRESS_CONFIG=$WP_CONFIG_NAME \
    php8.2 -c "$TB/php/php.ini" -d memory_limit=1G seed.php "$WP_POSTS" "http://127.0.0.1:$WEB_PORT") \
    >>"$LOGS/wp-seed.log" 2>&1 || die "seeding WordPress failed; see $LOGS/wp-seed.log"
  set_cap db "$(cat "$RUN/cap-db")"
  mariadb-dump --no-defaults --socket="$RUN/mysqld.sock" -uroot --single-transaction --skip-dump-date wordpress |
    gzip -1 >"$dump.tmp" && mv "$dump.tmp" "$dump"
  log "seeded in $((SECONDS - t0)) s"
}

wp_stamp() { { cat "$WP_STACK/seed.php"; echo "$WP_POSTS"; } | sha256sum | cut -c1-16; }

# ---------------------------------------------------------------- tiers

stack_start() {
  set -- $DEFAULT_POOLS
  echo "$*" >"$RUN/pools"
  set_mem_limit app "$PHP_MEMORY"
  # The host-named config Debian's wp-config.php reads (see the top).
  { echo "<?php // softalloc testbed: $TB"; echo "require '$TB/php/wp-config.php';"; } >"$WP_ETC"
  db_start "$TB/mariadb-wordpress" "$(wp_stamp)" wp_load \
    --max-connections="$3" --thread-cache-size=200 --innodb-flush-log-at-trx-commit=2 --max-allowed-packet=64M --userstat=1
  fpm_start "$2"
  fpm_metrics_start
  web_config "$1"
  wp_web_start
}

# web_config THREADS: Apache's pools at up (apply edits them through
# examples/hooks/apache.sh), one child holding every thread (as in the
# bulletin board's stacks), and the php-fpm worker's max= connections.
# No enablereuse: a kept FastCGI connection ties a php-fpm child to one
# Apache thread.
web_config() {
  local threads=$1
  ((threads >= 1 && threads <= 2048)) || die "web threads $threads: want 1..2048 (ThreadLimit)"
  mkdir -p "$TB/apache"
  cat >"$TB/apache/pools.conf" <<CONF
# Written by testbed.sh up; apply edits the pools in place through
# examples/hooks/apache.sh.
$(web_mpm "$threads")
<Proxy "fcgi://127.0.0.1:$APP_PORT">
  ProxySet max=$threads timeout=60
</Proxy>
CONF
}

wp_web_start() {
  web_conf "proxy_fcgi dir env alias" "DocumentRoot \"$WP_DIR\"
DirectoryIndex index.php
<Directory />
  AllowOverride None
  Require all denied
</Directory>
<Directory \"$WP_DIR\">
  Options FollowSymLinks
  AllowOverride None
  Require all granted
</Directory>
<Directory \"/var/lib/wordpress/wp-content\">
  Options FollowSymLinks
  Require all granted
</Directory>
Alias /wp-content /var/lib/wordpress/wp-content
# Debian's wp-config.php picks /etc/wordpress/config-\$WORDPRESS_CONFIG.php.
SetEnv WORDPRESS_CONFIG $WP_CONFIG_NAME
<FilesMatch \"\\.php\$\">
  SetHandler \"proxy:fcgi://127.0.0.1:$APP_PORT\"
</FilesMatch>"
  web_start "$STACK_HEALTH"
  http_ok / $WEB_PORT || die "WordPress's front page does not answer 200; see $LOGS/php-errors.log and $LOGS/apache-error.log"
}

# fpm_metrics_start: a small Apache of its own in the monitor group, HTTP on
# FPM_METRICS_PORT to php-fpm's FastCGI status listener: Prometheus speaks
# HTTP only, Debian has no php-fpm exporter, and going through the web tier's
# Apache would count each scrape as a page and queue it behind them.
fpm_metrics_start() {
  local mods=/usr/lib/apache2/modules
  mkdir -p "$TB/fpm-metrics" "$RUN/fpm-metrics"
  cat >"$TB/fpm-metrics/httpd.conf" <<CONF
# Written by testbed.sh up: php-fpm's status page over HTTP.
ServerRoot "$TB/fpm-metrics"
ServerName 127.0.0.1
Listen 127.0.0.1:$FPM_METRICS_PORT
PidFile "$RUN/fpm-metrics.pid"
DefaultRuntimeDir "$RUN/fpm-metrics"
ErrorLog "$LOGS/fpm-metrics-error.log"
LogLevel warn
User www-data
Group www-data
LoadModule mpm_event_module $mods/mod_mpm_event.so
LoadModule authz_core_module $mods/mod_authz_core.so
LoadModule proxy_module $mods/mod_proxy.so
LoadModule proxy_fcgi_module $mods/mod_proxy_fcgi.so
StartServers 1
ServerLimit 1
ThreadsPerChild 4
MaxRequestWorkers 4
ProxyPass /status fcgi://127.0.0.1:$FPM_STATUS_PORT/status timeout=5
CONF
  apache2 -t -f "$TB/fpm-metrics/httpd.conf" >>"$LOGS/fpm-metrics.log" 2>&1 || die "the status proxy's configuration does not parse; see $LOGS/fpm-metrics.log"
  (in_group monitor apache2 -f "$TB/fpm-metrics/httpd.conf" -k start) >>"$LOGS/fpm-metrics.log" 2>&1 || die "the status proxy did not start; see $LOGS/fpm-metrics.log"
  wait_for "php-fpm's status page" 30 http_ok '/status?openmetrics' $FPM_METRICS_PORT
}

stack_scrape_jobs() {
  cat <<YAML
  - job_name: phpfpm
    metrics_path: /status
    params: {openmetrics: ['']}
    static_configs: [{targets: ['127.0.0.1:$FPM_METRICS_PORT'], labels: {tier: app}}]
YAML
}

stack_stop() {
  if pid_alive fpm-metrics; then
    apache2 -f "$TB/fpm-metrics/httpd.conf" -k stop >>"$LOGS/fpm-metrics.log" 2>&1 || true
    local deadline=$((SECONDS + 15))
    while pid_alive fpm-metrics && ((SECONDS < deadline)); do sleep 0.1; done
  fi
  stop_pid fpm-metrics
  # php-fpm's master ends its children on TERM.
  stop_pid app
  if [ -f "$WP_ETC" ] && grep -q 'softalloc testbed' "$WP_ETC"; then rm -f "$WP_ETC"; fi
}

stack_status() {
  echo "  pools (web threads, php-fpm children, db max_connections): $(cat "$RUN/pools" 2>/dev/null || echo '?')"
  echo "  wordpress stack: $WP_DIR, config $WP_ETC, php-fpm status http://127.0.0.1:$FPM_METRICS_PORT/status?openmetrics"
}

# ---------------------------------------------------------------- apply

# stack_apply WEB_THREADS CHILDREN [MAX_CONNECTIONS]: each tier's pool
# through its example hook, each of which leaves its pool as it was when it
# fails, and says what it changed on stderr.
stack_apply() {
  [ $# -eq 2 ] || [ $# -eq 3 ] || die "apply: want WEB_THREADS PHP_CHILDREN [DB_MAX_CONNECTIONS]"
  local w=$1 c=$2 m=${3:-} old
  [[ $w =~ ^[1-9][0-9]*$ && $c =~ ^[1-9][0-9]*$ ]] && [[ -z $m || $m =~ ^[1-9][0-9]*$ ]] ||
    die "apply $*: want positive integers: web threads, php-fpm children, and optionally MariaDB's max_connections"
  # The hooks check what the servers refuse; these bounds are the testbed's
  # (the machine's memory, Apache's ThreadLimit).
  ((c <= 4096)) || die "php-fpm children $c: want 1..4096"
  ((w <= 2048)) || die "web threads $w: want 1..2048 (ThreadLimit)"
  # Two connections a child and 10 for monitoring and administration
  # (algorithms' DefaultConnectionsPerChild and ConnectionReserve), never
  # below MariaDB's default unless given.
  if [ -z "$m" ]; then m=$((2 * c + 10)); ((m < 151)) && m=151; fi
  require_up apply
  cg_detect
  old=$(cat "$RUN/pools")
  [ "$old" = "$w $c $m" ] && return 0
  set -- $old
  # The DB first when it grows, last when it shrinks, so that it always
  # admits the children that run.
  (($m >= $3)) && db_apply "$m"
  fpm_apply "$c"
  (($m < $3)) && db_apply "$m"
  [ "$(web_pools_threads)" = "$w" ] || web_apply "$w"
  echo "$w $c $m" >"$RUN/pools"
  log "applied $w-$c-$m"
}

# db_apply MAX_CONNECTIONS: examples/hooks/mariadb.sh on the server's socket.
db_apply() {
  MYSQL_SOCKET=$RUN/mysqld.sock MYSQL_USER=root "$HOOKS/mariadb.sh" "$1" >&2 ||
    die "apply: MariaDB's max_connections = $1: examples/hooks/mariadb.sh failed (above)"
}

# fpm_apply CHILDREN: examples/hooks/phpfpm.sh on the testbed's pool file:
# php-fpm -t on the new file (put back when refused), USR2, until the
# status page (the monitor's proxy to pm.status_listen) shows CHILDREN
# processes and none of the old children is left. php-fpm -t reads our
# php.ini alone, as the master does.
fpm_apply() {
  PHPFPM_POOL=$TB/php/pool.d/www.conf PHPFPM_CONF=$TB/php/php-fpm.conf PHPFPM_PID=$RUN/php-fpm.pid \
    PHPFPM_STATUS=http://127.0.0.1:$FPM_METRICS_PORT/status PHPFPM_INI=$TB/php/php.ini PHPFPM_BIN=php-fpm8.2 \
    PHP_INI_SCAN_DIR= HOOK_WAIT=30 "$HOOKS/phpfpm.sh" "$1" >&2 ||
    die "apply: php-fpm's $1 children: examples/hooks/phpfpm.sh failed (above)"
}
