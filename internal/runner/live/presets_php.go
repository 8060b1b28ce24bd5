package live

// phpPresets read a PHP stack: php-fpm's status page.
var phpPresets = map[string]Queries{
	"phpfpm": {
		About: PresetAbout{
			Reads: "a php-fpm pool: its children (busy, size, the share of the window with all busy or more requests queued than idle children), " +
				"requests/s and the mean time a child spends on one",
			Exporter: "php-fpm's own status page in OpenMetrics (pm.status_path, scraped with ?openmetrics) through an HTTP " +
				"proxy to FastCGI such as Apache's mod_proxy_fcgi ({instance}: the proxy's address)",
			Notes: "Prometheus speaks HTTP and the status page is FastCGI: proxy it (ProxyPass /status fcgi://127.0.0.1:PORT/status " +
				"and params: {openmetrics: ['']} in the scrape config). Serve it from pm.status_listen (php-fpm 8.0+), an invisible pool " +
				"of its own: from pm.status_path on the pool's own socket it waits behind the pages when every child is busy. " +
				"The pool's size is the processes running, which is pm.max_children with pm = static; with dynamic or ondemand " +
				"it is the children spawned, and php-fpm exports no max_children: give the size in the deployment's pools. " +
				"php-fpm counts no request durations: responseTime is Little's law, the mean busy children over the accepted " +
				"requests per second, the time in a child (not in the listen queue). The status page's own requests go to the " +
				"invisible pool and count in neither. The pool is the tier's children, which the model keeps as its threads.",
		},
		Throughput:   phpfpmRate,
		ResponseTime: phpfpmBusy + " / " + phpfpmRate,
		Pools: map[string]PoolQueries{"threads": {
			Busy: phpfpmBusy,
			Size: `max(max_over_time(phpfpm_total_processes{instance="{instance}"}[{window}]))`,
			// A 1 s sample is full when every child is busy or more
			// requests wait in the listen queue than there are idle
			// children to take them (with pm = dynamic, also when php-fpm
			// could spawn no more: max_children_reached rose). Any queue
			// at all is no sign: under a CPU cap idle children accept late,
			// and on WordPress a queue of 1 beside 26-29 idle children of
			// 40 read the pool full, which find-critical then doubled.
			FullShare: `avg_over_time(clamp_max(` +
				`(sum(phpfpm_active_processes{instance="{instance}"}) >= bool sum(phpfpm_total_processes{instance="{instance}"}))` +
				` + (sum(phpfpm_listen_queue{instance="{instance}"}) > bool (sum(phpfpm_total_processes{instance="{instance}"}) - sum(phpfpm_active_processes{instance="{instance}"})))` +
				` + (sum(increase(phpfpm_max_children_reached{instance="{instance}"}[2s])) > bool 0), 1)[{window}:1s])`,
		}},
	},
}

const (
	phpfpmRate = `sum(rate(phpfpm_accepted_connections{instance="{instance}"}[{window}]))`
	phpfpmBusy = `sum(avg_over_time(phpfpm_active_processes{instance="{instance}"}[{window}]))`
)
