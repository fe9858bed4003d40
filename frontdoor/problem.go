package frontdoor

// ProblemSlowBody is the problem type of the 408 a bodyRate answers when it
// cuts a body off.
const ProblemSlowBody = "https://github.com/geoidem/geoidem/blob/main/docs/problems.md#body-too-slow"
