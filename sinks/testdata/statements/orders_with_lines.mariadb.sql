-- comment
/* readside orders_with_lines */ 

-- upsert (version guard)
INSERT INTO `orders_with_lines` (`customer_id`, `id`, `_rs_version`) VALUES (?, ?, ?), (?, ?, ?) ON DUPLICATE KEY UPDATE `customer_id` = IF(VALUES(`_rs_version`) > `_rs_version`, VALUES(`customer_id`), `customer_id`), `id` = IF(VALUES(`_rs_version`) > `_rs_version`, VALUES(`id`), `id`), `_rs_version` = GREATEST(`_rs_version`, VALUES(`_rs_version`))

-- lenient upsert (ENUM index 0)
SET STATEMENT sql_mode = TRIM(BOTH ',' FROM REPLACE(CONCAT(',', @@SESSION.sql_mode, ','), ',STRICT_ALL_TABLES,', ',')) FOR INSERT INTO `orders_with_lines` (`customer_id`, `id`, `_rs_version`) VALUES (?, ?, ?), (?, ?, ?) ON DUPLICATE KEY UPDATE `customer_id` = IF(VALUES(`_rs_version`) > `_rs_version`, VALUES(`customer_id`), `customer_id`), `id` = IF(VALUES(`_rs_version`) > `_rs_version`, VALUES(`id`), `id`), `_rs_version` = GREATEST(`_rs_version`, VALUES(`_rs_version`))

-- guarded delete
DELETE FROM `orders_with_lines` WHERE (`customer_id` = ? AND `id` = ? AND `_rs_version` < ?) OR (`customer_id` = ? AND `id` = ? AND `_rs_version` < ?)

-- truncate rows
DELETE FROM `orders_with_lines` WHERE _rs_version < ?

-- children lines: stored links (locking the state rows)
SELECT `c_order_id` FROM `_readside_child_orders_with_lines_lines` FORCE INDEX (PRIMARY) WHERE `_rs_key` IN (?, ?) AND `c_order_id` IS NOT NULL FOR UPDATE

-- children lines: lock links
INSERT IGNORE INTO `_readside_childlink_orders_with_lines_lines` (`l_order_id`) VALUES (?), (?) ON DUPLICATE KEY UPDATE `l_order_id` = `l_order_id`

-- children lines: lock every link (truncation)
SELECT `l_order_id` FROM `_readside_childlink_orders_with_lines_lines` ORDER BY `l_order_id` FOR UPDATE

-- children lines: child state (version guard)
INSERT INTO `_readside_child_orders_with_lines_lines` (`_rs_key`, `c_order_id`, `c_line_no`, `c_id`, `c_qty`, `c_sku`, `_rs_version`) VALUES (?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE `c_order_id` = IF(VALUES(`_rs_version`) > `_rs_version`, VALUES(`c_order_id`), `c_order_id`), `c_line_no` = IF(VALUES(`_rs_version`) > `_rs_version`, VALUES(`c_line_no`), `c_line_no`), `c_id` = IF(VALUES(`_rs_version`) > `_rs_version`, VALUES(`c_id`), `c_id`), `c_qty` = IF(VALUES(`_rs_version`) > `_rs_version`, VALUES(`c_qty`), `c_qty`), `c_sku` = IF(VALUES(`_rs_version`) > `_rs_version`, VALUES(`c_sku`), `c_sku`), `_rs_version` = GREATEST(`_rs_version`, VALUES(`_rs_version`))

-- children lines: truncate state
UPDATE `_readside_child_orders_with_lines_lines` SET `c_order_id` = NULL, `c_line_no` = NULL, `c_id` = NULL, `c_qty` = NULL, `c_sku` = NULL, `_rs_version` = ? WHERE `_rs_version` < ?

-- children lines: refresh
UPDATE `orders_with_lines` AS r SET r.`lines` = (SELECT JSON_ARRAYAGG(JSON_OBJECT('qty', s.`c_qty`, 'sku', s.`c_sku`) ORDER BY s.`c_line_no`, s.`c_id` LIMIT 100) FROM `_readside_child_orders_with_lines_lines` AS s WHERE s.`c_order_id` = r.`id`), r.`lines_count` = (SELECT COUNT(*) FROM `_readside_child_orders_with_lines_lines` AS s WHERE s.`c_order_id` = r.`id`) WHERE r.`id` IN (?, ?)

-- children lines: refresh every row (truncation)
UPDATE `orders_with_lines` AS r SET r.`lines` = (SELECT JSON_ARRAYAGG(JSON_OBJECT('qty', s.`c_qty`, 'sku', s.`c_sku`) ORDER BY s.`c_line_no`, s.`c_id` LIMIT 100) FROM `_readside_child_orders_with_lines_lines` AS s WHERE s.`c_order_id` = r.`id`), r.`lines_count` = (SELECT COUNT(*) FROM `_readside_child_orders_with_lines_lines` AS s WHERE s.`c_order_id` = r.`id`)

