-- comment
/* readside daily_stats */ 

-- aggregate: read contributions, locking them
SELECT `key_text`, `_rs_version`, `g_customer_id`, `g_date_created_at`, `v_statuses`, `v_total` FROM `_readside_agg_daily_stats` FORCE INDEX (PRIMARY) WHERE `key_text` IN (?, ?) FOR UPDATE

-- aggregate: read contributions and the truncation floor
(SELECT `key_text`, `_rs_version`, `g_customer_id`, `g_date_created_at`, `v_statuses`, `v_total` FROM `_readside_agg_daily_stats` FORCE INDEX (PRIMARY) WHERE `key_text` IN (?, ?) FOR UPDATE) UNION ALL SELECT '', version, NULL, NULL, NULL, NULL FROM `_readside_truncations` WHERE projection = ?

-- aggregate: the truncation floor alone (no contribution read)
SELECT '', version, NULL, NULL, NULL, NULL FROM `_readside_truncations` WHERE projection = ?

-- aggregate: write contributions
INSERT INTO `_readside_agg_daily_stats` (`key_text`, `_rs_version`, `g_customer_id`, `g_date_created_at`, `v_statuses`, `v_total`) VALUES (?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?) AS _rs_new ON DUPLICATE KEY UPDATE `_rs_version` = _rs_new.`_rs_version`, `g_customer_id` = _rs_new.`g_customer_id`, `g_date_created_at` = _rs_new.`g_date_created_at`, `v_statuses` = _rs_new.`v_statuses`, `v_total` = _rs_new.`v_total`

-- aggregate: insert first contributions
INSERT INTO `_readside_agg_daily_stats` (`key_text`, `_rs_version`, `g_customer_id`, `g_date_created_at`, `v_statuses`, `v_total`) VALUES (?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?)

-- aggregate: group deltas
INSERT INTO `daily_stats` (`customer_id`, `date_created_at`, `orders`, `statuses`, `total`, `_rs_n_total`, `_rs_rows`, `_rs_version`) VALUES (?, ?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, ?, ?) AS _rs_new ON DUPLICATE KEY UPDATE `orders` = `orders` + _rs_new.`orders`, `statuses` = `statuses` + _rs_new.`statuses`, `_rs_n_total` = `_rs_n_total` + _rs_new.`_rs_n_total`, `total` = IF(`_rs_n_total` = 0, NULL, COALESCE(`total`, 0) + COALESCE(_rs_new.`total`, 0)), `_rs_rows` = `_rs_rows` + _rs_new.`_rs_rows`, `_rs_version` = GREATEST(`_rs_version`, _rs_new.`_rs_version`)

-- aggregate: remove empty groups
DELETE FROM `daily_stats` WHERE `_rs_rows` <= 0 AND (`customer_id`, `date_created_at`) IN ((?, ?), (?, ?))

-- aggregate truncation: withdraw older contributions
UPDATE `_readside_agg_daily_stats` SET `g_customer_id` = NULL, `g_date_created_at` = NULL, `v_statuses` = NULL, `v_total` = NULL, `_rs_version` = ? WHERE `_rs_version` < ?

-- aggregate truncation: clear groups
DELETE FROM `daily_stats`

-- aggregate truncation: rebuild groups
INSERT INTO `daily_stats` (`customer_id`, `date_created_at`, `orders`, `statuses`, `total`, `_rs_n_total`, `_rs_rows`, `_rs_version`) SELECT `g_customer_id`, `g_date_created_at`, COUNT(*), COUNT(DISTINCT `v_statuses`), SUM(`v_total`), COUNT(`v_total`), COUNT(*), MAX(`_rs_version`) FROM `_readside_agg_daily_stats` WHERE `g_customer_id` IS NOT NULL AND `g_date_created_at` IS NOT NULL GROUP BY `g_customer_id`, `g_date_created_at`

-- count(distinct) statuses: add to the reference counts
INSERT INTO `_readside_dst_daily_stats_statuses` (`g_customer_id`, `g_date_created_at`, `_rs_value`, `_rs_refs`, `_rs_pending`, `_rs_batch`) VALUES (?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?) AS _rs_new ON DUPLICATE KEY UPDATE `_rs_pending` = IF(`_rs_batch` = _rs_new.`_rs_batch`, `_rs_pending` + _rs_new.`_rs_refs`, _rs_new.`_rs_refs`), `_rs_refs` = `_rs_refs` + _rs_new.`_rs_refs`, `_rs_batch` = _rs_new.`_rs_batch`

-- count(distinct) statuses: read the touched reference counts
SELECT `g_customer_id`, `g_date_created_at`, `_rs_value`, `_rs_refs`, `_rs_pending` FROM `_readside_dst_daily_stats_statuses` WHERE `_rs_batch` = ? AND (`_rs_refs` > 0) <> (`_rs_refs` > `_rs_pending`) AND (`g_customer_id`, `g_date_created_at`, `_rs_value`) IN ((?, ?, ?), (?, ?, ?))

-- count(distinct) statuses: remove values no row holds
DELETE FROM `_readside_dst_daily_stats_statuses` WHERE `_rs_refs` <= 0 AND (`g_customer_id`, `g_date_created_at`, `_rs_value`) IN ((?, ?, ?), (?, ?, ?))

-- count(distinct) statuses: truncation: clear
DELETE FROM `_readside_dst_daily_stats_statuses`

-- count(distinct) statuses: truncation: rebuild
INSERT INTO `_readside_dst_daily_stats_statuses` (`g_customer_id`, `g_date_created_at`, `_rs_value`, `_rs_refs`, `_rs_pending`, `_rs_batch`) SELECT `g_customer_id`, `g_date_created_at`, `v_statuses`, COUNT(*), 0, 0 FROM `_readside_agg_daily_stats` WHERE `g_customer_id` IS NOT NULL AND `g_date_created_at` IS NOT NULL AND `v_statuses` IS NOT NULL GROUP BY `g_customer_id`, `g_date_created_at`, `v_statuses`

-- count(distinct) statuses: repair: clear groups
DELETE FROM `_readside_dst_daily_stats_statuses` WHERE (`g_customer_id`, `g_date_created_at`) IN ((?, ?), (?, ?))

-- count(distinct) statuses: repair: rebuild groups
INSERT INTO `_readside_dst_daily_stats_statuses` (`g_customer_id`, `g_date_created_at`, `_rs_value`, `_rs_refs`, `_rs_pending`, `_rs_batch`) SELECT `g_customer_id`, `g_date_created_at`, `v_statuses`, COUNT(*), 0, 0 FROM `_readside_agg_daily_stats` WHERE `g_customer_id` IS NOT NULL AND `g_date_created_at` IS NOT NULL AND `v_statuses` IS NOT NULL AND (`g_customer_id`, `g_date_created_at`) IN ((?, ?), (?, ?)) GROUP BY `g_customer_id`, `g_date_created_at`, `v_statuses`

