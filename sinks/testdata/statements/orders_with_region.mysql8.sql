-- comment
/* readside orders_with_region */ 

-- upsert (version guard)
INSERT INTO `orders_with_region` (`customer_id`, `id`, `warehouse_id`, `_rs_version`) VALUES (?, ?, ?, ?), (?, ?, ?, ?) AS _rs_new ON DUPLICATE KEY UPDATE `customer_name` = IF(_rs_new.`_rs_version` > `_rs_version` AND NOT (_rs_new.`customer_id` <=> `customer_id`), NULL, `customer_name`), `_rs_j1_region_id` = IF(_rs_new.`_rs_version` > `_rs_version` AND NOT (_rs_new.`customer_id` <=> `customer_id`), NULL, `_rs_j1_region_id`), `_rs_v_join1` = IF(_rs_new.`_rs_version` > `_rs_version` AND NOT (_rs_new.`customer_id` <=> `customer_id`), 0, `_rs_v_join1`), `region_name` = IF(_rs_new.`_rs_version` > `_rs_version` AND NOT (_rs_new.`customer_id` <=> `customer_id`), NULL, `region_name`), `_rs_v_join2` = IF(_rs_new.`_rs_version` > `_rs_version` AND NOT (_rs_new.`customer_id` <=> `customer_id`), 0, `_rs_v_join2`), `warehouse_city` = IF(_rs_new.`_rs_version` > `_rs_version` AND NOT (_rs_new.`warehouse_id` <=> `warehouse_id`), NULL, `warehouse_city`), `_rs_v_join3` = IF(_rs_new.`_rs_version` > `_rs_version` AND NOT (_rs_new.`warehouse_id` <=> `warehouse_id`), 0, `_rs_v_join3`), `customer_id` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`customer_id`, `customer_id`), `id` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`id`, `id`), `warehouse_id` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`warehouse_id`, `warehouse_id`), `_rs_version` = GREATEST(`_rs_version`, _rs_new.`_rs_version`)

-- lenient upsert (ENUM index 0)
SET STATEMENT sql_mode = TRIM(BOTH ',' FROM REPLACE(CONCAT(',', @@SESSION.sql_mode, ','), ',STRICT_ALL_TABLES,', ',')) FOR INSERT INTO `orders_with_region` (`customer_id`, `id`, `warehouse_id`, `_rs_version`) VALUES (?, ?, ?, ?), (?, ?, ?, ?) AS _rs_new ON DUPLICATE KEY UPDATE `customer_name` = IF(_rs_new.`_rs_version` > `_rs_version` AND NOT (_rs_new.`customer_id` <=> `customer_id`), NULL, `customer_name`), `_rs_j1_region_id` = IF(_rs_new.`_rs_version` > `_rs_version` AND NOT (_rs_new.`customer_id` <=> `customer_id`), NULL, `_rs_j1_region_id`), `_rs_v_join1` = IF(_rs_new.`_rs_version` > `_rs_version` AND NOT (_rs_new.`customer_id` <=> `customer_id`), 0, `_rs_v_join1`), `region_name` = IF(_rs_new.`_rs_version` > `_rs_version` AND NOT (_rs_new.`customer_id` <=> `customer_id`), NULL, `region_name`), `_rs_v_join2` = IF(_rs_new.`_rs_version` > `_rs_version` AND NOT (_rs_new.`customer_id` <=> `customer_id`), 0, `_rs_v_join2`), `warehouse_city` = IF(_rs_new.`_rs_version` > `_rs_version` AND NOT (_rs_new.`warehouse_id` <=> `warehouse_id`), NULL, `warehouse_city`), `_rs_v_join3` = IF(_rs_new.`_rs_version` > `_rs_version` AND NOT (_rs_new.`warehouse_id` <=> `warehouse_id`), 0, `_rs_v_join3`), `customer_id` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`customer_id`, `customer_id`), `id` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`id`, `id`), `warehouse_id` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`warehouse_id`, `warehouse_id`), `_rs_version` = GREATEST(`_rs_version`, _rs_new.`_rs_version`)

-- guarded delete
DELETE FROM `orders_with_region` WHERE (`customer_id` = ? AND `id` = ? AND `_rs_version` < ?) OR (`customer_id` = ? AND `id` = ? AND `_rs_version` < ?)

-- truncate rows
DELETE FROM `orders_with_region` WHERE _rs_version < ?

-- join shop.customers: lock parents
INSERT INTO `_readside_join_orders_with_region_1` (`k_id`, `_rs_version`) VALUES (?, 0), (?, 0) AS _rs_new ON DUPLICATE KEY UPDATE `k_id` = `k_id`

-- join shop.customers: parent state
INSERT INTO `_readside_join_orders_with_region_1` (`k_id`, `c_customer_name`, `c__rs_j1_region_id`, `_rs_version`) VALUES (?, ?, ?, ?), (?, ?, ?, ?) AS _rs_new ON DUPLICATE KEY UPDATE `c_customer_name` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`c_customer_name`, `c_customer_name`), `c__rs_j1_region_id` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`c__rs_j1_region_id`, `c__rs_j1_region_id`), `_rs_version` = GREATEST(`_rs_version`, _rs_new.`_rs_version`)

-- join shop.customers: truncate state
UPDATE `_readside_join_orders_with_region_1` SET `c_customer_name` = NULL, `c__rs_j1_region_id` = NULL, `_rs_version` = ? WHERE `_rs_version` < ?

-- join shop.customers: truncate read copies
UPDATE `orders_with_region` SET `customer_name` = NULL, `_rs_j1_region_id` = NULL, `region_name` = NULL, `_rs_v_join2` = 0, `_rs_v_join1` = ? WHERE `_rs_v_join1` < ?

-- join shop.customers: fan-out
UPDATE `orders_with_region` AS r JOIN `_readside_join_orders_with_region_1` AS s ON r.`customer_id` = s.`k_id` SET r.`customer_name` = s.`c_customer_name`, r.`_rs_j1_region_id` = s.`c__rs_j1_region_id`, r.`_rs_v_join1` = s.`_rs_version` WHERE r.`_rs_v_join1` < s.`_rs_version` AND s.`k_id` IN (?, ?)

-- join shop.customers: fill the rows the batch writes
UPDATE `orders_with_region` AS r STRAIGHT_JOIN `_readside_join_orders_with_region_1` AS s ON r.`customer_id` = s.`k_id` SET r.`customer_name` = s.`c_customer_name`, r.`_rs_j1_region_id` = s.`c__rs_j1_region_id`, r.`_rs_v_join1` = s.`_rs_version` WHERE r.`_rs_v_join1` < s.`_rs_version` AND (r.`customer_id`, r.`id`) IN ((?, ?), (?, ?))

-- join shop.regions: lock parents
INSERT INTO `_readside_join_orders_with_region_2` (`k_id`, `_rs_version`) VALUES (?, 0), (?, 0) AS _rs_new ON DUPLICATE KEY UPDATE `k_id` = `k_id`

-- join shop.regions: parent state
INSERT INTO `_readside_join_orders_with_region_2` (`k_id`, `c_region_name`, `_rs_version`) VALUES (?, ?, ?), (?, ?, ?) AS _rs_new ON DUPLICATE KEY UPDATE `c_region_name` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`c_region_name`, `c_region_name`), `_rs_version` = GREATEST(`_rs_version`, _rs_new.`_rs_version`)

-- join shop.regions: truncate state
UPDATE `_readside_join_orders_with_region_2` SET `c_region_name` = NULL, `_rs_version` = ? WHERE `_rs_version` < ?

-- join shop.regions: truncate read copies
UPDATE `orders_with_region` SET `region_name` = NULL, `_rs_v_join2` = ? WHERE `_rs_v_join2` < ?

-- join shop.regions: fan-out
UPDATE `orders_with_region` AS r JOIN `_readside_join_orders_with_region_2` AS s ON r.`_rs_j1_region_id` = s.`k_id` SET r.`region_name` = s.`c_region_name`, r.`_rs_v_join2` = s.`_rs_version` WHERE r.`_rs_v_join2` < s.`_rs_version` AND s.`k_id` IN (?, ?)

-- join shop.regions: fill the rows the batch writes
UPDATE `orders_with_region` AS r STRAIGHT_JOIN `_readside_join_orders_with_region_2` AS s ON r.`_rs_j1_region_id` = s.`k_id` SET r.`region_name` = s.`c_region_name`, r.`_rs_v_join2` = s.`_rs_version` WHERE r.`_rs_v_join2` < s.`_rs_version` AND (r.`customer_id`, r.`id`) IN ((?, ?), (?, ?))

-- join shop.regions: keys carried by the via join's state
SELECT DISTINCT `c__rs_j1_region_id` FROM `_readside_join_orders_with_region_1` AS s WHERE `c__rs_j1_region_id` IS NOT NULL AND s.`k_id` IN (?, ?)

-- join shop.regions: detach (before the via join's fan-out)
UPDATE `orders_with_region` AS r JOIN `_readside_join_orders_with_region_1` AS s ON r.`customer_id` = s.`k_id` SET r.`region_name` = NULL, r.`_rs_v_join2` = 0 WHERE r.`_rs_v_join1` < s.`_rs_version` AND NOT (r.`_rs_j1_region_id` <=> s.`c__rs_j1_region_id`) AND s.`k_id` IN (?, ?)

-- join shop.warehouses: lock parents
INSERT INTO `_readside_join_orders_with_region_3` (`k_id`, `_rs_version`) VALUES (?, 0), (?, 0) AS _rs_new ON DUPLICATE KEY UPDATE `k_id` = `k_id`

-- join shop.warehouses: parent state
INSERT INTO `_readside_join_orders_with_region_3` (`k_id`, `c_warehouse_city`, `_rs_version`) VALUES (?, ?, ?), (?, ?, ?) AS _rs_new ON DUPLICATE KEY UPDATE `c_warehouse_city` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`c_warehouse_city`, `c_warehouse_city`), `_rs_version` = GREATEST(`_rs_version`, _rs_new.`_rs_version`)

-- join shop.warehouses: truncate state
UPDATE `_readside_join_orders_with_region_3` SET `c_warehouse_city` = NULL, `_rs_version` = ? WHERE `_rs_version` < ?

-- join shop.warehouses: truncate read copies
UPDATE `orders_with_region` SET `warehouse_city` = NULL, `_rs_v_join3` = ? WHERE `_rs_v_join3` < ?

-- join shop.warehouses: fan-out
UPDATE `orders_with_region` AS r JOIN `_readside_join_orders_with_region_3` AS s ON r.`warehouse_id` = s.`k_id` SET r.`warehouse_city` = s.`c_warehouse_city`, r.`_rs_v_join3` = s.`_rs_version` WHERE r.`_rs_v_join3` < s.`_rs_version` AND s.`k_id` IN (?, ?)

-- join shop.warehouses: fill the rows the batch writes
UPDATE `orders_with_region` AS r STRAIGHT_JOIN `_readside_join_orders_with_region_3` AS s ON r.`warehouse_id` = s.`k_id` SET r.`warehouse_city` = s.`c_warehouse_city`, r.`_rs_v_join3` = s.`_rs_version` WHERE r.`_rs_v_join3` < s.`_rs_version` AND (r.`customer_id`, r.`id`) IN ((?, ?), (?, ?))

