package newest

// ParseJSON is parseJSON, for the tests of package newest_test.
var ParseJSON = parseJSON

// DefaultMaxSkew is the bound of a Policy whose MaxSkew is not set.
const DefaultMaxSkew = defaultMaxSkew
