export interface Layer {
  name: string;
  entries: string[];
  why: string;
}
export const LAYERS: Layer[];
export const STANDALONE: string[];
export function layerOverrides(): unknown[];
