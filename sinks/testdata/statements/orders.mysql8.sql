-- comment
/* readside orders */ 

-- upsert (version guard)
INSERT INTO `orders` (`id`, `customer`, `total`, `_rs_version`) VALUES (?, ?, ?, ?), (?, ?, ?, ?) AS _rs_new ON DUPLICATE KEY UPDATE `id` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`id`, `id`), `customer` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`customer`, `customer`), `total` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`total`, `total`), `_rs_version` = GREATEST(`_rs_version`, _rs_new.`_rs_version`)

-- lenient upsert (ENUM index 0)
SET STATEMENT sql_mode = TRIM(BOTH ',' FROM REPLACE(CONCAT(',', @@SESSION.sql_mode, ','), ',STRICT_ALL_TABLES,', ',')) FOR INSERT INTO `orders` (`id`, `customer`, `total`, `_rs_version`) VALUES (?, ?, ?, ?), (?, ?, ?, ?) AS _rs_new ON DUPLICATE KEY UPDATE `id` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`id`, `id`), `customer` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`customer`, `customer`), `total` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`total`, `total`), `_rs_version` = GREATEST(`_rs_version`, _rs_new.`_rs_version`)

-- guarded delete
DELETE FROM `orders` WHERE (`id` = ? AND `_rs_version` < ?) OR (`id` = ? AND `_rs_version` < ?)

-- truncate rows
DELETE FROM `orders` WHERE _rs_version < ?

