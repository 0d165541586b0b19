package server

import (
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

type translationService struct {
	tributaryv1.UnimplementedTranslationServiceServer
}

// NewTranslationService returns the TranslationService implementation.
func NewTranslationService() tributaryv1.TranslationServiceServer {
	return &translationService{}
}
