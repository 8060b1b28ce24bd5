package live

// phpPresets read a PHP stack: php-fpm's status page.
var phpPresets = map[string]Queries{}
