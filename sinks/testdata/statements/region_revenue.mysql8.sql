-- comment
/* readside region_revenue */ 

-- aggregate: read contributions, locking them
SELECT `key_text`, `_rs_version`, `g_region`, `g_city_upper`, `g_status`, `v_total`, `_rs_l1_id`, `_rs_l3_id` FROM `_readside_agg_region_revenue` FORCE INDEX (PRIMARY) WHERE `key_text` IN (?, ?) FOR UPDATE

-- aggregate: read contributions and the truncation floor
(SELECT `key_text`, `_rs_version`, `g_region`, `g_city_upper`, `g_status`, `v_total`, `_rs_l1_id`, `_rs_l3_id` FROM `_readside_agg_region_revenue` FORCE INDEX (PRIMARY) WHERE `key_text` IN (?, ?) FOR UPDATE) UNION ALL SELECT '', version, NULL, NULL, NULL, NULL, NULL, NULL FROM `_readside_truncations` WHERE projection = ?

-- aggregate: the truncation floor alone (no contribution read)
SELECT '', version, NULL, NULL, NULL, NULL, NULL, NULL FROM `_readside_truncations` WHERE projection = ?

-- aggregate: write contributions
INSERT INTO `_readside_agg_region_revenue` (`key_text`, `_rs_version`, `g_region`, `g_city_upper`, `g_status`, `v_total`, `_rs_l1_id`, `_rs_l3_id`) VALUES (?, ?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, ?, ?) AS _rs_new ON DUPLICATE KEY UPDATE `_rs_version` = _rs_new.`_rs_version`, `g_region` = _rs_new.`g_region`, `g_city_upper` = _rs_new.`g_city_upper`, `g_status` = _rs_new.`g_status`, `v_total` = _rs_new.`v_total`, `_rs_l1_id` = _rs_new.`_rs_l1_id`, `_rs_l3_id` = _rs_new.`_rs_l3_id`

-- aggregate: insert first contributions
INSERT INTO `_readside_agg_region_revenue` (`key_text`, `_rs_version`, `g_region`, `g_city_upper`, `g_status`, `v_total`, `_rs_l1_id`, `_rs_l3_id`) VALUES (?, ?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, ?, ?)

-- aggregate: group deltas
INSERT INTO `region_revenue` (`region`, `city_upper`, `status`, `orders`, `total`, `_rs_n_total`, `_rs_rows`, `_rs_version`) VALUES (?, ?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, ?, ?) AS _rs_new ON DUPLICATE KEY UPDATE `orders` = `orders` + _rs_new.`orders`, `_rs_n_total` = `_rs_n_total` + _rs_new.`_rs_n_total`, `total` = IF(`_rs_n_total` = 0, NULL, COALESCE(`total`, 0) + COALESCE(_rs_new.`total`, 0)), `_rs_rows` = `_rs_rows` + _rs_new.`_rs_rows`, `_rs_version` = GREATEST(`_rs_version`, _rs_new.`_rs_version`)

-- aggregate: remove empty groups
DELETE FROM `region_revenue` WHERE `_rs_rows` <= 0 AND (`region`, `city_upper`, `status`) IN ((?, ?, ?), (?, ?, ?))

-- aggregate truncation: withdraw older contributions
UPDATE `_readside_agg_region_revenue` SET `g_region` = NULL, `g_city_upper` = NULL, `g_status` = NULL, `_rs_l1_id` = NULL, `_rs_l3_id` = NULL, `v_total` = NULL, `_rs_version` = ? WHERE `_rs_version` < ?

-- aggregate truncation: clear groups
DELETE FROM `region_revenue`

-- aggregate truncation: rebuild groups
INSERT INTO `region_revenue` (`region`, `city_upper`, `status`, `orders`, `total`, `_rs_n_total`, `_rs_rows`, `_rs_version`) SELECT `g_region`, `g_city_upper`, `g_status`, COUNT(*), SUM(`v_total`), COUNT(`v_total`), COUNT(*), MAX(`_rs_version`) FROM `_readside_agg_region_revenue` WHERE `g_region` IS NOT NULL AND `g_city_upper` IS NOT NULL AND `g_status` IS NOT NULL GROUP BY `g_region`, `g_city_upper`, `g_status`

-- join shop.customers: lock parents
INSERT INTO `_readside_join_region_revenue_1` (`k_id`, `_rs_version`) VALUES (?, 0), (?, 0) AS _rs_new ON DUPLICATE KEY UPDATE `k_id` = `k_id`

-- join shop.customers: parent state
INSERT INTO `_readside_join_region_revenue_1` (`k_id`, `c__rs_j1_region_id`, `_rs_version`) VALUES (?, ?, ?), (?, ?, ?) AS _rs_new ON DUPLICATE KEY UPDATE `c__rs_j1_region_id` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`c__rs_j1_region_id`, `c__rs_j1_region_id`), `_rs_version` = GREATEST(`_rs_version`, _rs_new.`_rs_version`)

-- join shop.customers: fan-out
UPDATE `region_revenue` AS r JOIN `_readside_join_region_revenue_1` AS s ON r.`_rs_l1_id` = s.`k_id` SET r.`_rs_j1_region_id` = s.`c__rs_j1_region_id`, r.`_rs_v_join1` = s.`_rs_version` WHERE r.`_rs_v_join1` < s.`_rs_version` AND s.`k_id` IN (?, ?)

-- join shop.regions: lock parents
INSERT INTO `_readside_join_region_revenue_2` (`k_id`, `_rs_version`) VALUES (?, 0), (?, 0) AS _rs_new ON DUPLICATE KEY UPDATE `k_id` = `k_id`

-- join shop.regions: parent state
INSERT INTO `_readside_join_region_revenue_2` (`k_id`, `c_region`, `_rs_version`) VALUES (?, ?, ?), (?, ?, ?) AS _rs_new ON DUPLICATE KEY UPDATE `c_region` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`c_region`, `c_region`), `_rs_version` = GREATEST(`_rs_version`, _rs_new.`_rs_version`)

-- join shop.regions: fan-out
UPDATE `region_revenue` AS r JOIN `_readside_join_region_revenue_2` AS s ON r.`_rs_j1_region_id` = s.`k_id` SET r.`region` = s.`c_region`, r.`_rs_v_join2` = s.`_rs_version` WHERE r.`_rs_v_join2` < s.`_rs_version` AND s.`k_id` IN (?, ?)

-- join shop.warehouses: lock parents
INSERT INTO `_readside_join_region_revenue_3` (`k_id`, `_rs_version`) VALUES (?, 0), (?, 0) AS _rs_new ON DUPLICATE KEY UPDATE `k_id` = `k_id`

-- join shop.warehouses: parent state
INSERT INTO `_readside_join_region_revenue_3` (`k_id`, `c_city_upper`, `_rs_version`) VALUES (?, ?, ?), (?, ?, ?) AS _rs_new ON DUPLICATE KEY UPDATE `c_city_upper` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`c_city_upper`, `c_city_upper`), `_rs_version` = GREATEST(`_rs_version`, _rs_new.`_rs_version`)

-- join shop.warehouses: fan-out
UPDATE `region_revenue` AS r JOIN `_readside_join_region_revenue_3` AS s ON r.`_rs_l3_id` = s.`k_id` SET r.`city_upper` = s.`c_city_upper`, r.`_rs_v_join3` = s.`_rs_version` WHERE r.`_rs_v_join3` < s.`_rs_version` AND s.`k_id` IN (?, ?)

-- joined groups: the batches' lock
INSERT INTO `_readside_truncations` (projection, version) VALUES (?, 0) AS _rs_new ON DUPLICATE KEY UPDATE version = version

-- joined groups: the batches' shared lock
INSERT IGNORE INTO `_readside_truncations` (projection, version) VALUES (?, 0)

-- regroup: contributions of given keys
SELECT c.`key_text`, c.`_rs_version`, c.`g_region`, c.`g_city_upper`, c.`g_status`, c.`v_total`, s2.`c_region`, s3.`c_city_upper` FROM `_readside_agg_region_revenue` AS c LEFT JOIN `_readside_join_region_revenue_1` AS s1 ON s1.`k_id` = c.`_rs_l1_id` LEFT JOIN `_readside_join_region_revenue_2` AS s2 ON s2.`k_id` = s1.`c__rs_j1_region_id` LEFT JOIN `_readside_join_region_revenue_3` AS s3 ON s3.`k_id` = c.`_rs_l3_id` WHERE c.`key_text` IN (?, ?)

-- regroup: every contribution (a parent truncated)
SELECT c.`key_text`, c.`_rs_version`, c.`g_region`, c.`g_city_upper`, c.`g_status`, c.`v_total`, s2.`c_region`, s3.`c_city_upper` FROM `_readside_agg_region_revenue` AS c LEFT JOIN `_readside_join_region_revenue_1` AS s1 ON s1.`k_id` = c.`_rs_l1_id` LEFT JOIN `_readside_join_region_revenue_2` AS s2 ON s2.`k_id` = s1.`c__rs_j1_region_id` LEFT JOIN `_readside_join_region_revenue_3` AS s3 ON s3.`k_id` = c.`_rs_l3_id`

-- regroup: move contributions of given keys
UPDATE `_readside_agg_region_revenue` AS c LEFT JOIN `_readside_join_region_revenue_1` AS s1 ON s1.`k_id` = c.`_rs_l1_id` LEFT JOIN `_readside_join_region_revenue_2` AS s2 ON s2.`k_id` = s1.`c__rs_j1_region_id` LEFT JOIN `_readside_join_region_revenue_3` AS s3 ON s3.`k_id` = c.`_rs_l3_id` SET c.`g_region` = s2.`c_region`, c.`g_city_upper` = s3.`c_city_upper` WHERE c.`key_text` IN (?, ?) AND c.`g_status` IS NOT NULL

-- regroup: move every contribution
UPDATE `_readside_agg_region_revenue` AS c LEFT JOIN `_readside_join_region_revenue_1` AS s1 ON s1.`k_id` = c.`_rs_l1_id` LEFT JOIN `_readside_join_region_revenue_2` AS s2 ON s2.`k_id` = s1.`c__rs_j1_region_id` LEFT JOIN `_readside_join_region_revenue_3` AS s3 ON s3.`k_id` = c.`_rs_l3_id` SET c.`g_region` = s2.`c_region`, c.`g_city_upper` = s3.`c_city_upper` WHERE c.`g_status` IS NOT NULL

-- regroup: contributions below join shop.customers
SELECT c.`key_text`, c.`_rs_version`, c.`g_region`, c.`g_city_upper`, c.`g_status`, c.`v_total`, s2.`c_region`, s3.`c_city_upper` FROM `_readside_agg_region_revenue` AS c LEFT JOIN `_readside_join_region_revenue_1` AS s1 ON s1.`k_id` = c.`_rs_l1_id` LEFT JOIN `_readside_join_region_revenue_2` AS s2 ON s2.`k_id` = s1.`c__rs_j1_region_id` LEFT JOIN `_readside_join_region_revenue_3` AS s3 ON s3.`k_id` = c.`_rs_l3_id` WHERE s1.`k_id` IN (?, ?)

-- regroup: move contributions below join shop.customers
UPDATE `_readside_agg_region_revenue` AS c LEFT JOIN `_readside_join_region_revenue_1` AS s1 ON s1.`k_id` = c.`_rs_l1_id` LEFT JOIN `_readside_join_region_revenue_2` AS s2 ON s2.`k_id` = s1.`c__rs_j1_region_id` LEFT JOIN `_readside_join_region_revenue_3` AS s3 ON s3.`k_id` = c.`_rs_l3_id` SET c.`g_region` = s2.`c_region`, c.`g_city_upper` = s3.`c_city_upper` WHERE s1.`k_id` IN (?, ?) AND c.`g_status` IS NOT NULL

-- regroup: contributions below join shop.regions
SELECT c.`key_text`, c.`_rs_version`, c.`g_region`, c.`g_city_upper`, c.`g_status`, c.`v_total`, s2.`c_region`, s3.`c_city_upper` FROM `_readside_agg_region_revenue` AS c LEFT JOIN `_readside_join_region_revenue_1` AS s1 ON s1.`k_id` = c.`_rs_l1_id` LEFT JOIN `_readside_join_region_revenue_2` AS s2 ON s2.`k_id` = s1.`c__rs_j1_region_id` LEFT JOIN `_readside_join_region_revenue_3` AS s3 ON s3.`k_id` = c.`_rs_l3_id` WHERE s2.`k_id` IN (?, ?)

-- regroup: move contributions below join shop.regions
UPDATE `_readside_agg_region_revenue` AS c LEFT JOIN `_readside_join_region_revenue_1` AS s1 ON s1.`k_id` = c.`_rs_l1_id` LEFT JOIN `_readside_join_region_revenue_2` AS s2 ON s2.`k_id` = s1.`c__rs_j1_region_id` LEFT JOIN `_readside_join_region_revenue_3` AS s3 ON s3.`k_id` = c.`_rs_l3_id` SET c.`g_region` = s2.`c_region`, c.`g_city_upper` = s3.`c_city_upper` WHERE s2.`k_id` IN (?, ?) AND c.`g_status` IS NOT NULL

-- regroup: contributions below join shop.warehouses
SELECT c.`key_text`, c.`_rs_version`, c.`g_region`, c.`g_city_upper`, c.`g_status`, c.`v_total`, s2.`c_region`, s3.`c_city_upper` FROM `_readside_agg_region_revenue` AS c LEFT JOIN `_readside_join_region_revenue_1` AS s1 ON s1.`k_id` = c.`_rs_l1_id` LEFT JOIN `_readside_join_region_revenue_2` AS s2 ON s2.`k_id` = s1.`c__rs_j1_region_id` LEFT JOIN `_readside_join_region_revenue_3` AS s3 ON s3.`k_id` = c.`_rs_l3_id` WHERE s3.`k_id` IN (?, ?)

-- regroup: move contributions below join shop.warehouses
UPDATE `_readside_agg_region_revenue` AS c LEFT JOIN `_readside_join_region_revenue_1` AS s1 ON s1.`k_id` = c.`_rs_l1_id` LEFT JOIN `_readside_join_region_revenue_2` AS s2 ON s2.`k_id` = s1.`c__rs_j1_region_id` LEFT JOIN `_readside_join_region_revenue_3` AS s3 ON s3.`k_id` = c.`_rs_l3_id` SET c.`g_region` = s2.`c_region`, c.`g_city_upper` = s3.`c_city_upper` WHERE s3.`k_id` IN (?, ?) AND c.`g_status` IS NOT NULL

-- joined groups of the links to shop.customers
SELECT s1.`k_id`, s2.`c_region` FROM `_readside_join_region_revenue_1` AS s1 LEFT JOIN `_readside_join_region_revenue_2` AS s2 ON s2.`k_id` = s1.`c__rs_j1_region_id` WHERE s1.`k_id` IN (?, ?)

-- joined groups of the links to shop.warehouses
SELECT s3.`k_id`, s3.`c_city_upper` FROM `_readside_join_region_revenue_3` AS s3 WHERE s3.`k_id` IN (?, ?)

