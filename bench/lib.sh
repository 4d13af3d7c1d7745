# The base httpd configuration of the benchmarks (bench/run.sh and
# bench/profile.sh): the same modules, KeepAlive and mod_remoteip settings,
# so that their figures describe the same server. Uses STAGE, MODS and
# USERCONF (User/Group lines when started as root, else empty).

# conf_head MPM NAME PORT RUNDIR: everything but what a configuration adds.
conf_head() { # mpm name port rundir
    local mpm=$1 name=$2 port=$3 run=$4
    cat <<CONF
ServerRoot $STAGE
ServerName 127.0.0.1
Listen 127.0.0.1:$port
PidFile $run/httpd.pid
DefaultRuntimeDir $run
ErrorLog $STAGE/logs/error-$name.log
LogLevel warn
$USERCONF
LoadModule mpm_${mpm}_module $MODS/mod_mpm_${mpm}.so
LoadModule authz_core_module $MODS/mod_authz_core.so
LoadModule mime_module $MODS/mod_mime.so
LoadModule remoteip_module $MODS/mod_remoteip.so
LoadModule setenvif_module $MODS/mod_setenvif.so
TypesConfig /etc/mime.types
DocumentRoot $STAGE/htdocs
<Directory $STAGE/htdocs>
    Require all granted
</Directory>
KeepAlive On
MaxKeepAliveRequests 0
KeepAliveTimeout 30
# The clients are told apart by X-Forwarded-For from a trusted proxy.
RemoteIPHeader X-Forwarded-For
RemoteIPInternalProxy 127.0.0.1
CONF
    if [ "$mpm" = event ]; then
        cat <<CONF
StartServers 2
ServerLimit 4
ThreadsPerChild 25
MinSpareThreads 25
MaxSpareThreads 100
MaxRequestWorkers 100
MaxConnectionsPerChild 0
CONF
    else
        cat <<CONF
StartServers 40
ServerLimit 80
MinSpareServers 40
MaxSpareServers 80
MaxRequestWorkers 80
MaxConnectionsPerChild 0
CONF
    fi
}
