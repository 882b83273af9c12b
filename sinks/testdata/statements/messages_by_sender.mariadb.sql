-- comment
/* readside messages_by_sender */ 

-- upsert (version guard)
INSERT INTO `messages_by_sender` (`sender_id`, `created_at`, `id`, `body`, `_rs_version`) VALUES (?, ?, ?, ?, ?), (?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE `sender_id` = IF(VALUES(`_rs_version`) > `_rs_version`, VALUES(`sender_id`), `sender_id`), `created_at` = IF(VALUES(`_rs_version`) > `_rs_version`, VALUES(`created_at`), `created_at`), `id` = IF(VALUES(`_rs_version`) > `_rs_version`, VALUES(`id`), `id`), `body` = IF(VALUES(`_rs_version`) > `_rs_version`, VALUES(`body`), `body`), `_rs_version` = GREATEST(`_rs_version`, VALUES(`_rs_version`))

-- lenient upsert (ENUM index 0)
SET STATEMENT sql_mode = TRIM(BOTH ',' FROM REPLACE(CONCAT(',', @@SESSION.sql_mode, ','), ',STRICT_ALL_TABLES,', ',')) FOR INSERT INTO `messages_by_sender` (`sender_id`, `created_at`, `id`, `body`, `_rs_version`) VALUES (?, ?, ?, ?, ?), (?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE `sender_id` = IF(VALUES(`_rs_version`) > `_rs_version`, VALUES(`sender_id`), `sender_id`), `created_at` = IF(VALUES(`_rs_version`) > `_rs_version`, VALUES(`created_at`), `created_at`), `id` = IF(VALUES(`_rs_version`) > `_rs_version`, VALUES(`id`), `id`), `body` = IF(VALUES(`_rs_version`) > `_rs_version`, VALUES(`body`), `body`), `_rs_version` = GREATEST(`_rs_version`, VALUES(`_rs_version`))

-- guarded delete
DELETE FROM `messages_by_sender` WHERE (`sender_id` = ? AND `created_at` = ? AND `id` = ? AND `_rs_version` < ?) OR (`sender_id` = ? AND `created_at` = ? AND `id` = ? AND `_rs_version` < ?)

-- truncate rows
DELETE FROM `messages_by_sender` WHERE _rs_version < ?

