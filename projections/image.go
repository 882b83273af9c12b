package projections

import (
	"encoding/json"

	"github.com/readside/readside/event"
)

// Image is the row image a projection reads, which filters match: an
// event's before or after member as event/ decodes it.
type Image = event.Image

// ImageOf makes an image of m (event.ImageOf).
func ImageOf(m map[string]json.RawMessage) *Image { return event.ImageOf(m) }
