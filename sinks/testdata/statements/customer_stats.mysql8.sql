-- comment
/* readside customer_stats */ 

-- aggregate: read contributions, locking them
SELECT `key_text`, `_rs_version`, `g_customer_id`, `v_avg_total`, `v_first_at`, `v_last_at`, `v_paid`, `v_paid_total`, `v_priced`, `v_total` FROM `_readside_agg_customer_stats` FORCE INDEX (PRIMARY) WHERE `key_text` IN (?, ?) FOR UPDATE

-- aggregate: read contributions and the truncation floor
(SELECT `key_text`, `_rs_version`, `g_customer_id`, `v_avg_total`, `v_first_at`, `v_last_at`, `v_paid`, `v_paid_total`, `v_priced`, `v_total` FROM `_readside_agg_customer_stats` FORCE INDEX (PRIMARY) WHERE `key_text` IN (?, ?) FOR UPDATE) UNION ALL SELECT '', version, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM `_readside_truncations` WHERE projection = ?

-- aggregate: the truncation floor alone (no contribution read)
SELECT '', version, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM `_readside_truncations` WHERE projection = ?

-- aggregate: write contributions
INSERT INTO `_readside_agg_customer_stats` (`key_text`, `_rs_version`, `g_customer_id`, `v_avg_total`, `v_first_at`, `v_last_at`, `v_paid`, `v_paid_total`, `v_priced`, `v_total`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) AS _rs_new ON DUPLICATE KEY UPDATE `_rs_version` = _rs_new.`_rs_version`, `g_customer_id` = _rs_new.`g_customer_id`, `v_avg_total` = _rs_new.`v_avg_total`, `v_first_at` = _rs_new.`v_first_at`, `v_last_at` = _rs_new.`v_last_at`, `v_paid` = _rs_new.`v_paid`, `v_paid_total` = _rs_new.`v_paid_total`, `v_priced` = _rs_new.`v_priced`, `v_total` = _rs_new.`v_total`

-- aggregate: insert first contributions
INSERT INTO `_readside_agg_customer_stats` (`key_text`, `_rs_version`, `g_customer_id`, `v_avg_total`, `v_first_at`, `v_last_at`, `v_paid`, `v_paid_total`, `v_priced`, `v_total`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)

-- aggregate: group deltas
INSERT INTO `customer_stats` (`customer_id`, `avg_total`, `_rs_n_avg_total`, `_rs_sum_avg_total`, `first_at`, `last_at`, `orders`, `paid`, `paid_total`, `_rs_n_paid_total`, `priced`, `total`, `_rs_n_total`, `_rs_rows`, `_rs_version`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) AS _rs_new ON DUPLICATE KEY UPDATE `_rs_n_avg_total` = `_rs_n_avg_total` + _rs_new.`_rs_n_avg_total`, `_rs_sum_avg_total` = IF(`_rs_n_avg_total` = 0, NULL, COALESCE(`_rs_sum_avg_total`, 0) + COALESCE(_rs_new.`_rs_sum_avg_total`, 0)), `first_at` = COALESCE(LEAST(`first_at`, _rs_new.`first_at`), _rs_new.`first_at`, `first_at`), `last_at` = COALESCE(GREATEST(`last_at`, _rs_new.`last_at`), _rs_new.`last_at`, `last_at`), `orders` = `orders` + _rs_new.`orders`, `paid` = `paid` + _rs_new.`paid`, `_rs_n_paid_total` = `_rs_n_paid_total` + _rs_new.`_rs_n_paid_total`, `paid_total` = IF(`_rs_n_paid_total` = 0, NULL, COALESCE(`paid_total`, 0) + COALESCE(_rs_new.`paid_total`, 0)), `priced` = `priced` + _rs_new.`priced`, `_rs_n_total` = `_rs_n_total` + _rs_new.`_rs_n_total`, `total` = IF(`_rs_n_total` = 0, NULL, COALESCE(`total`, 0) + COALESCE(_rs_new.`total`, 0)), `_rs_rows` = `_rs_rows` + _rs_new.`_rs_rows`, `_rs_version` = GREATEST(`_rs_version`, _rs_new.`_rs_version`)

-- aggregate: remove empty groups
DELETE FROM `customer_stats` WHERE `_rs_rows` <= 0 AND `customer_id` IN (?, ?)

-- aggregate truncation: withdraw older contributions
UPDATE `_readside_agg_customer_stats` SET `g_customer_id` = NULL, `v_avg_total` = NULL, `v_first_at` = NULL, `v_last_at` = NULL, `v_paid` = 0, `v_paid_total` = NULL, `v_priced` = 0, `v_total` = NULL, `_rs_version` = ? WHERE `_rs_version` < ?

-- aggregate truncation: clear groups
DELETE FROM `customer_stats`

-- aggregate truncation: rebuild groups
INSERT INTO `customer_stats` (`customer_id`, `avg_total`, `_rs_n_avg_total`, `_rs_sum_avg_total`, `first_at`, `last_at`, `orders`, `paid`, `paid_total`, `_rs_n_paid_total`, `priced`, `total`, `_rs_n_total`, `_rs_rows`, `_rs_version`) SELECT `g_customer_id`, AVG(`v_avg_total`), COUNT(`v_avg_total`), SUM(`v_avg_total`), MIN(`v_first_at`), MAX(`v_last_at`), COUNT(*), SUM(`v_paid`), SUM(`v_paid_total`), COUNT(`v_paid_total`), SUM(`v_priced`), SUM(`v_total`), COUNT(`v_total`), COUNT(*), MAX(`_rs_version`) FROM `_readside_agg_customer_stats` WHERE `g_customer_id` IS NOT NULL GROUP BY `g_customer_id`

-- aggregate: recompute min(created_at)
UPDATE `customer_stats` AS r SET r.`first_at` = (SELECT c.`v_first_at` FROM `_readside_agg_customer_stats` AS c WHERE c.`g_customer_id` = r.`customer_id` AND c.`v_first_at` IS NOT NULL ORDER BY c.`v_first_at` LIMIT 1) WHERE (r.`customer_id` = ? AND (r.`first_at` < ?) IS NOT TRUE) OR (r.`customer_id` = ? AND (r.`first_at` < ?) IS NOT TRUE)

-- aggregate: recompute max(created_at)
UPDATE `customer_stats` AS r SET r.`last_at` = (SELECT c.`v_first_at` FROM `_readside_agg_customer_stats` AS c WHERE c.`g_customer_id` = r.`customer_id` AND c.`v_first_at` = (SELECT c.`v_first_at` FROM `_readside_agg_customer_stats` AS c WHERE c.`g_customer_id` = r.`customer_id` AND c.`v_first_at` IS NOT NULL ORDER BY c.`v_first_at` DESC LIMIT 1) ORDER BY c.`v_first_at` LIMIT 1) WHERE (r.`customer_id` = ? AND (r.`last_at` > ?) IS NOT TRUE) OR (r.`customer_id` = ? AND (r.`last_at` > ?) IS NOT TRUE)

-- aggregate: recompute AVG
UPDATE `customer_stats` AS r SET r.`avg_total` = IF(r.`_rs_n_avg_total` = 0, NULL, r.`_rs_sum_avg_total` / r.`_rs_n_avg_total`) WHERE r.`customer_id` IN (?, ?)

-- aggregate truncation: fill join 1
UPDATE `customer_stats` AS r JOIN `_readside_join_customer_stats_1` AS s ON r.`customer_id` = s.`k_id` SET r.`customer_name` = s.`c_customer_name`, r.`_rs_v_join1` = s.`_rs_version` WHERE r.`_rs_v_join1` < s.`_rs_version`

-- join shop.customers: lock parents
INSERT INTO `_readside_join_customer_stats_1` (`k_id`, `_rs_version`) VALUES (?, 0), (?, 0) AS _rs_new ON DUPLICATE KEY UPDATE `k_id` = `k_id`

-- join shop.customers: parent state
INSERT INTO `_readside_join_customer_stats_1` (`k_id`, `c_customer_name`, `_rs_version`) VALUES (?, ?, ?), (?, ?, ?) AS _rs_new ON DUPLICATE KEY UPDATE `c_customer_name` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`c_customer_name`, `c_customer_name`), `_rs_version` = GREATEST(`_rs_version`, _rs_new.`_rs_version`)

-- join shop.customers: fan-out
UPDATE `customer_stats` AS r JOIN `_readside_join_customer_stats_1` AS s ON r.`customer_id` = s.`k_id` SET r.`customer_name` = s.`c_customer_name`, r.`_rs_v_join1` = s.`_rs_version` WHERE r.`_rs_v_join1` < s.`_rs_version` AND s.`k_id` IN (?, ?)

