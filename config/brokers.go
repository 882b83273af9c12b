package config

// ClientBrokers are the brokers a client of readside's topics dials: the
// configured ones, or else the embedded broker's loopback address (it
// runs inside readside run, so a verb or a scheduled job reaches it
// there).
func (k Kafka) ClientBrokers() []string {
	if len(k.Brokers) == 0 {
		return []string{k.EmbeddedListen}
	}
	return k.Brokers
}
