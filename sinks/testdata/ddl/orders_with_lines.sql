CREATE TABLE IF NOT EXISTS `orders_with_lines` (
  `customer_id` int(11) NOT NULL,
  `id` int(11) NOT NULL,
  `lines` longtext CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL COMMENT 'readside: shop.order_lines rows as a JSON array',
  `lines_count` BIGINT NOT NULL DEFAULT 0 COMMENT 'readside: how many shop.order_lines rows (the array holds at most limit)',
  `_rs_version` BIGINT UNSIGNED NOT NULL COMMENT 'readside: source version of this row',
  PRIMARY KEY (`customer_id`, `id`),
  KEY `_rs_child_lines` (`id`)
) COMMENT='readside projection orders_with_lines from shop.orders';

CREATE TABLE IF NOT EXISTS `_readside_child_orders_with_lines_lines` (
  `_rs_key` varbinary(2048) NOT NULL COMMENT 'readside: the child row''s primary key (its record key)',
  `c_order_id` int(11) NULL,
  `c_line_no` smallint(6) NULL,
  `c_id` int(11) NULL,
  `c_qty` JSON NULL,
  `c_sku` varchar(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NULL,
  `_rs_version` bigint unsigned NOT NULL COMMENT 'readside: version of the child row (NULL link: deleted or no parent)',
  PRIMARY KEY (`_rs_key`),
  KEY `_rs_link` (`c_order_id`, `c_line_no`, `c_id`)
) COMMENT='readside children state: latest shop.order_lines rows for projection orders_with_lines.lines';

CREATE TABLE IF NOT EXISTS `_readside_childlink_orders_with_lines_lines` (
  `l_order_id` int(11) NOT NULL,
  PRIMARY KEY (`l_order_id`)
) COMMENT='readside children links: a lock row per parent of projection orders_with_lines.lines';
