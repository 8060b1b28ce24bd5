<?php
// seed.php POSTS URL: installs WordPress into the testbed's empty database
// and fills it through WordPress's own API (wp_install, wp_insert_user,
// wp_insert_term, wp_insert_post, wp_insert_comment), deterministically: the
// same POSTS give the same rows, ids and dates on every machine. Run by
// testbed.sh up with WORDPRESS_CONFIG set, so that Debian's wp-config.php
// reads the testbed's config. Prints one progress line per 500 posts.

if ($argc < 3 || !ctype_digit($argv[1]) || (int)$argv[1] < 1) {
    fwrite(STDERR, "usage: seed.php POSTS URL (POSTS a positive integer)\n");
    exit(2);
}
$posts = (int)$argv[1];
$url = $argv[2];
$_SERVER['HTTP_HOST'] = parse_url($url, PHP_URL_HOST) . ':' . parse_url($url, PHP_URL_PORT);
$_SERVER['REQUEST_URI'] = '/';
define('WP_INSTALLING', true);
// wp_install mails the new site's admin: a pluggable function, defined
// before WordPress loads its own, keeps that off the machine's mailer.
function wp_mail() { return true; }
require_once '/usr/share/wordpress/wp-load.php';
require_once ABSPATH . 'wp-admin/includes/upgrade.php';

// A PRNG of our own (xorshift32): WordPress's own calls to mt_rand and
// random_int must not move the content.
$state = 36;
function rnd(int $n): int {
    global $state;
    $state ^= ($state << 13) & 0xFFFFFFFF;
    $state ^= $state >> 17;
    $state ^= ($state << 5) & 0xFFFFFFFF;
    return $state % $n;
}

$words = explode(' ', 'allocation apache bottleneck cache capacity client cluster concurrency connection '
    . 'container core database deadline deployment disk driver engine error event exporter fault '
    . 'garbage gateway goodput graph heap host index instance interval kernel knee latency layer '
    . 'limit load lock memory metric model monitor network node observation operator overhead page '
    . 'pool process proxy query queue quota ramp replica request resource response round saturation '
    . 'scheduler server session share signal socket stack storage stream system thread throughput '
    . 'tier timeout trace traffic transaction trial utilisation value window worker workload '
    . 'autumn breeze canyon desert forest garden harbor island lantern meadow mountain ocean orchard '
    . 'prairie quarry river summit thunder valley village willow');
function text(int $lo, int $hi): string {
    global $words;
    $n = $lo + rnd($hi - $lo + 1);
    $out = [];
    for ($i = 0; $i < $n; $i++) {
        $out[] = $words[rnd(count($words))];
    }
    return implode(' ', $out);
}

$t0 = microtime(true);
$result = wp_install('softalloc testbed', 'admin', 'admin@example.invalid', true, '', 'softalloc-testbed-admin');
if (is_wp_error($result)) {
    fwrite(STDERR, 'wp_install: ' . $result->get_error_message() . "\n");
    exit(1);
}
update_option('permalink_structure', '');
update_option('posts_per_page', 10);
update_option('default_comment_status', 'open');
update_option('comments_per_page', 50);
update_option('page_comments', 0);
update_option('blogdescription', 'WordPress seeded for softalloc');
// No pings or scheduled work per post: nothing would run them (WP-Cron is off).
remove_action('publish_post', '_publish_post_hook', 5);
wp_defer_term_counting(true);
wp_defer_comment_counting(true);
wp_suspend_cache_invalidation(true);

$authors = [];
for ($i = 1; $i <= 20; $i++) {
    $id = wp_insert_user([
        'user_login' => "author$i", 'user_pass' => "softalloc-author-$i", 'user_email' => "author$i@example.invalid",
        'display_name' => ucfirst(text(1, 1)) . " Author$i", 'role' => 'author',
    ]);
    if (is_wp_error($id)) {
        fwrite(STDERR, "wp_insert_user author$i: " . $id->get_error_message() . "\n");
        exit(1);
    }
    $authors[] = $id;
}
$categories = [];
for ($i = 1; $i <= 30; $i++) {
    $t = wp_insert_term(ucfirst($words[($i * 7) % count($words)]) . " $i", 'category', ['slug' => "category-$i"]);
    if (is_wp_error($t)) {
        fwrite(STDERR, "wp_insert_term category-$i: " . $t->get_error_message() . "\n");
        exit(1);
    }
    $categories[] = (int)$t['term_id'];
}
$tags = [];
for ($i = 1; $i <= 200; $i++) {
    $t = wp_insert_term($words[$i % count($words)] . "-$i", 'post_tag', ['slug' => "tag-$i"]);
    if (is_wp_error($t)) {
        fwrite(STDERR, "wp_insert_term tag-$i: " . $t->get_error_message() . "\n");
        exit(1);
    }
    $tags[] = (int)$t['term_id'];
}

// Posts one every 6 hours back from 2026-01-01, so that date archives hold
// months of them; comments from the hours after each post.
global $wpdb;
$end = gmmktime(0, 0, 0, 1, 1, 2026);
$comments = 0;
$wpdb->query('START TRANSACTION');
for ($p = 0; $p < $posts; $p++) {
    $date = gmdate('Y-m-d H:i:s', $end - ($posts - $p) * 6 * 3600);
    $paragraphs = [];
    for ($k = 0, $n = 3 + rnd(6); $k < $n; $k++) {
        $paragraphs[] = "<!-- wp:paragraph -->\n<p>" . ucfirst(text(40, 120)) . ".</p>\n<!-- /wp:paragraph -->";
    }
    $postTags = [];
    for ($k = 0, $n = 1 + rnd(5); $k < $n; $k++) {
        $postTags[] = $tags[rnd(count($tags))];
    }
    $id = wp_insert_post([
        'post_title' => ucfirst(text(3, 9)),
        'post_content' => implode("\n\n", $paragraphs),
        'post_excerpt' => '',
        'post_status' => 'publish',
        'post_author' => $authors[rnd(count($authors))],
        'post_date' => $date,
        'post_date_gmt' => $date,
        'post_category' => array_values(array_unique([$categories[rnd(count($categories))], $categories[rnd(count($categories))]])),
        'tags_input' => array_values(array_unique($postTags)),
        'comment_status' => 'open',
    ], true);
    if (is_wp_error($id)) {
        fwrite(STDERR, "wp_insert_post $p: " . $id->get_error_message() . "\n");
        exit(1);
    }
    // 0 to 15 comments, a third of posts with none.
    $n = rnd(3) == 0 ? 0 : 1 + rnd(15);
    for ($k = 0; $k < $n; $k++) {
        $who = rnd(4) == 0 ? $authors[rnd(count($authors))] : 0;
        $cdate = gmdate('Y-m-d H:i:s', strtotime($date . ' UTC') + 60 * (1 + $k * 7 + rnd(7)));
        $ok = wp_insert_comment([
            'comment_post_ID' => $id,
            'comment_author' => $who ? "author" . array_search($who, $authors) : 'Reader ' . (1 + rnd(500)),
            'comment_author_email' => $who ? '' : 'reader@example.invalid',
            'comment_content' => ucfirst(text(10, 60)) . '.',
            'comment_date' => $cdate,
            'comment_date_gmt' => $cdate,
            'comment_approved' => 1,
            'user_id' => $who,
        ]);
        if (!$ok) {
            fwrite(STDERR, "wp_insert_comment on post $id failed\n");
            exit(1);
        }
        $comments++;
    }
    if (($p + 1) % 500 == 0) {
        $wpdb->query('COMMIT');
        $wpdb->query('START TRANSACTION');
        printf("%d posts, %d comments, %.0f s\n", $p + 1, $comments, microtime(true) - $t0);
    }
}
$wpdb->query('COMMIT');
wp_defer_term_counting(false);
wp_defer_comment_counting(false);
wp_suspend_cache_invalidation(false);
printf("seeded %d posts, %d comments, 20 authors, 30 categories, 200 tags in %.0f s\n", $posts, $comments, microtime(true) - $t0);
