-- comment
/* readside orders */ 

-- upsert (version guard)
INSERT INTO `orders` (`id`, `customer`, `total`, `_rs_version`) VALUES (?, ?, ?, ?), (?, ?, ?, ?) ON DUPLICATE KEY UPDATE `id` = IF(VALUES(`_rs_version`) > `_rs_version`, VALUES(`id`), `id`), `customer` = IF(VALUES(`_rs_version`) > `_rs_version`, VALUES(`customer`), `customer`), `total` = IF(VALUES(`_rs_version`) > `_rs_version`, VALUES(`total`), `total`), `_rs_version` = GREATEST(`_rs_version`, VALUES(`_rs_version`))

-- lenient upsert (ENUM index 0)
SET STATEMENT sql_mode = TRIM(BOTH ',' FROM REPLACE(CONCAT(',', @@SESSION.sql_mode, ','), ',STRICT_ALL_TABLES,', ',')) FOR INSERT INTO `orders` (`id`, `customer`, `total`, `_rs_version`) VALUES (?, ?, ?, ?), (?, ?, ?, ?) ON DUPLICATE KEY UPDATE `id` = IF(VALUES(`_rs_version`) > `_rs_version`, VALUES(`id`), `id`), `customer` = IF(VALUES(`_rs_version`) > `_rs_version`, VALUES(`customer`), `customer`), `total` = IF(VALUES(`_rs_version`) > `_rs_version`, VALUES(`total`), `total`), `_rs_version` = GREATEST(`_rs_version`, VALUES(`_rs_version`))

-- guarded delete
DELETE FROM `orders` WHERE (`id` = ? AND `_rs_version` < ?) OR (`id` = ? AND `_rs_version` < ?)

-- truncate rows
DELETE FROM `orders` WHERE _rs_version < ?

