package newest

// ParseJSON is parseJSON, for the tests of package newest_test.
var ParseJSON = parseJSON
