// Package fakemodel is a model server for tests: it speaks the Anthropic
// Messages API, OpenAI Chat Completions and OpenAI Responses (streaming,
// with tool calls) on 127.0.0.1, and answers from a scenario instead of a
// model, so that the real agent programs can run offline. Every request is
// logged for assertions. Nothing in git-flume itself imports it.
package fakemodel
