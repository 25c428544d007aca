//! Stateright models of the Courier core and the SPEC section 7 properties (filled by the model-checking issue).
